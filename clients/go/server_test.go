package spades_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	spades "github.com/spades-engine/spades/clients/go"
)

// repoRoot is the repository's root, from this package's directory (go test
// runs a package's tests in its directory).
const repoRoot = "../.."

// testServer is clients/conformance/serve.py: a real server behind a proxy
// whose connections POST /cut drops.
type testServer struct {
	Address       string `json:"address"`
	Server        string `json:"server"`
	Control       string `json:"control"`
	OperatorToken string `json:"operatorToken"`
	// With serve.py --tls: the operator port (mutual TLS), and the PEM files
	// of the run's CA and of the operator's client certificate.
	Operator string `json:"operator"`
	TLS      struct {
		CA         string `json:"ca"`
		ClientCert string `json:"clientCert"`
		ClientKey  string `json:"clientKey"`
	} `json:"tls"`

	cmd   *exec.Cmd
	stdin io.WriteCloser
}

var (
	shared       *testServer
	sharedErr    error
	startOnce    sync.Once
	sharedTLS    *testServer
	sharedTLSErr error
	startTLSOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range []*testServer{shared, sharedTLS} {
		if s != nil {
			s.stop()
		}
	}
	os.Exit(code)
}

// python is the project's Python ($SPADES_PYTHON, which the Makefile sets;
// else the repository's .venv).
func python() string {
	if p := os.Getenv("SPADES_PYTHON"); p != "" {
		return p
	}
	venv := filepath.Join(repoRoot, ".venv", "bin", "python")
	if _, err := os.Stat(venv); err == nil {
		abs, _ := filepath.Abs(venv)
		return abs
	}
	return ""
}

// server returns the server shared by the package's tests, started on first use.
func server(t testing.TB) *testServer {
	t.Helper()
	startOnce.Do(func() { shared, sharedErr = startServer() })
	return started(t, shared, sharedErr)
}

// tlsServer is serve.py --tls, shared by the TLS tests: TLS only, with
// operator calls on the operator port over mutual TLS.
func tlsServer(t testing.TB) *testServer {
	t.Helper()
	startTLSOnce.Do(func() { sharedTLS, sharedTLSErr = startServer("--tls") })
	return started(t, sharedTLS, sharedTLSErr)
}

// ratedServer is a server of the test's own, stopped when it ends, whose
// leaderboards show a player after one rated game (--rating-min-games 1)
// and hold nobody else's players (also when the test runs again, -count).
func ratedServer(t testing.TB) *testServer {
	t.Helper()
	s, err := startServer("--", "--rating-min-games", "1")
	if s != nil {
		t.Cleanup(s.stop)
	}
	return started(t, s, err)
}

func started(t testing.TB, s *testServer, err error) *testServer {
	t.Helper()
	if err != nil {
		if strings.Contains(err.Error(), "SPADES_PYTHON") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return s
}

func startServer(args ...string) (*testServer, error) {
	py := python()
	if py == "" {
		return nil, fmt.Errorf("no Python with spades_server: set SPADES_PYTHON (make test-client-go does)")
	}
	argv := append([]string{filepath.Join(repoRoot, "clients", "conformance", "serve.py"), "--python", py}, args...)
	cmd := exec.Command(py, argv...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start serve.py: %w", err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	srv := &testServer{cmd: cmd, stdin: stdin}
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), srv); err != nil || srv.Address == "" {
			srv.stop()
			return nil, fmt.Errorf("serve.py: no address line (%q): %v", line, err)
		}
	case <-time.After(60 * time.Second):
		srv.stop()
		return nil, fmt.Errorf("serve.py: not ready after 60 s")
	}
	return srv, nil
}

// stop closes serve.py's standard input (it stops the server and exits),
// killing it if it has not exited after 20 s.
func (s *testServer) stop() {
	_ = s.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

// cut drops every connection through the proxy.
func (s *testServer) cut(t testing.TB) {
	t.Helper()
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Post(s.Control+"/cut", "text/plain", nil)
	if err != nil {
		t.Fatalf("POST /cut: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /cut: %s %s", resp.Status, body)
	}
}

// control makes a JSON control call (POST {control}/credential, /friend)
// and decodes its answer into out (numbers as json.Number when out is a map).
func (s *testServer) control(t testing.TB, path string, in, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	hc := http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Post(s.Control+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	answer, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s %s: %s %s", path, body, resp.Status, answer)
	}
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, answer)
	}
}

// credential is a player credential serve.py signs for the run (a JWT, valid
// 10 minutes) for playerID, shown to others as name.
func (s *testServer) credential(t testing.TB, playerID, name string) string {
	t.Helper()
	var answer struct {
		Credential string `json:"credential"`
	}
	s.control(t, "/credential", map[string]string{"playerId": playerID, "name": name}, &answer)
	if answer.Credential == "" {
		t.Fatal("POST /credential: no credential")
	}
	return answer.Credential
}

// dial connects a Client to the proxy, with the operator credential.
func (s *testServer) dial(t testing.TB, opts ...spades.Option) *spades.Client {
	t.Helper()
	opts = append([]spades.Option{spades.WithPlaintext(), spades.WithOperatorToken(s.OperatorToken)}, opts...)
	c, err := spades.Dial(s.Address, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testContext is a context that ends with the test, bounded in any case.
func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
