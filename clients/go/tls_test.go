package spades_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// dialTLS connects to addr with WithTLSFiles and the operator token.
func dialTLS(t *testing.T, srv *testServer, addr, cert, key string, opts ...spades.Option) *spades.Client {
	t.Helper()
	opts = append([]spades.Option{spades.WithTLSFiles(srv.TLS.CA, cert, key), spades.WithOperatorToken(srv.OperatorToken)}, opts...)
	c, err := spades.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// streamRefusal is the code and ErrorInfo reason of a Raw() stream's end.
func streamRefusal(t *testing.T, recv func() (*spadesv1.SpectateResponse, error)) (codes.Code, string) {
	t.Helper()
	for {
		_, err := recv()
		if err == nil {
			continue // events still on their way before the refusal
		}
		st := status.Convert(err)
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok {
				return st.Code(), info.GetReason()
			}
		}
		return st.Code(), ""
	}
}

func spectate(ctx context.Context, t *testing.T, c *spades.Client, matchID, token string) func() (*spadesv1.SpectateResponse, error) {
	t.Helper()
	if token != "" {
		ctx = spades.WithCredential(ctx, token)
	}
	stream, err := c.Raw().Spectate(ctx, &spadesv1.SpectateRequest{MatchId: matchID})
	if err != nil {
		t.Fatal(err)
	}
	return stream.Recv
}

// Players on the TLS port with the run's CA, the operator on the operator
// port with a client certificate; a private match watched with its token;
// ReissueSeatToken ends the old token's session; SetSpectators closes it.
func TestTLSAndMutualTLS(t *testing.T) {
	srv := tlsServer(t)
	ctx := testContext(t, time.Minute)
	operator := dialTLS(t, srv, srv.Operator, srv.TLS.ClientCert, srv.TLS.ClientKey)
	player := dialTLS(t, srv, srv.Address, "", "")

	created, err := operator.CreateMatch(ctx, &spadesv1.CreateMatchRequest{
		Seats:      []*spadesv1.SeatConfig{{Name: "Me"}, {Bot: true}, {Bot: true}, {Bot: true}},
		Seed:       5,
		HasSeed:    true,
		Spectators: spadesv1.Spectators_SPECTATORS_TOKEN,
	})
	if err != nil {
		t.Fatal(err)
	}
	matchID := created.GetMatch().GetMatchId()
	if created.GetMatch().GetSpectators() != spadesv1.Spectators_SPECTATORS_TOKEN || !strings.HasPrefix(created.GetSpectatorToken(), matchID+".") {
		t.Fatalf("summary %v, spectator token %q", created.GetMatch(), created.GetSpectatorToken())
	}
	seat := player.Seat(created.GetSeatTokens()[0].GetToken())
	if _, err := seat.Claim(ctx); err != nil {
		t.Fatal(err)
	}

	// The operator token on the players' port is refused: it needs the certificate.
	_, err = player.GetMatch(ctx, matchID)
	wantRefusal(t, err, codes.PermissionDenied, "CLIENT_CERT_REQUIRED")

	if code, reason := streamRefusal(t, spectate(ctx, t, player, matchID, "")); code != codes.Unauthenticated || reason != "SPECTATOR_TOKEN_REQUIRED" {
		t.Errorf("spectating without the token: %v %s", code, reason)
	}
	if first, err := spectate(ctx, t, player, matchID, created.GetSpectatorToken())(); err != nil || len(first.GetEvents()) == 0 {
		t.Fatalf("spectating with the token: %v, %v", first, err)
	}

	session, err := seat.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close(context.Background())
	if _, err := session.Next(ctx); err != nil {
		t.Fatal(err)
	}
	reissued, err := operator.ReissueSeatToken(ctx, matchID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err = session.Next(ctx); err != nil {
			break
		}
	}
	wantRefusal(t, err, codes.Unauthenticated, "TOKEN_REVOKED")
	if _, err := player.Seat(reissued.GetSeatToken().GetToken()).Claim(ctx); err != nil {
		t.Fatal(err)
	}

	changed, err := operator.SetSpectators(ctx, matchID, spadesv1.Spectators_SPECTATORS_NONE)
	if err != nil {
		t.Fatal(err)
	}
	if changed.GetMatch().GetSpectators() != spadesv1.Spectators_SPECTATORS_NONE || changed.GetSpectatorToken() != "" {
		t.Fatalf("SetSpectators: %v", changed)
	}
	if code, reason := streamRefusal(t, spectate(ctx, t, player, matchID, created.GetSpectatorToken())); code != codes.PermissionDenied || reason != "NOT_SPECTATABLE" {
		t.Errorf("spectating a private match: %v %s", code, reason)
	}
}

// Without the client certificate, without the CA, or in plaintext, no call
// gets through; files that cannot be used fail Dial.
func TestTLSRefusals(t *testing.T) {
	srv := tlsServer(t)
	ctx := testContext(t, time.Minute)
	once := spades.WithBackoff(spades.Backoff{MaxAttempts: 1})

	noCert := dialTLS(t, srv, srv.Operator, "", "", once)
	_, err := noCert.GetMatch(ctx, "no-such-match")
	if status.Code(err) != codes.Unavailable {
		t.Errorf("operator port without a client certificate: %v", err)
	}
	for name, opt := range map[string]spades.Option{"plaintext": spades.WithPlaintext(), "system roots": spades.WithTLS(nil)} {
		c, err := spades.Dial(srv.Address, opt, once)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Seat("m.s").View(ctx)
		_ = c.Close()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s to a TLS port: %v", name, err)
		}
	}

	for _, files := range [][3]string{
		{filepath.Join(t.TempDir(), "missing.crt"), "", ""},
		{srv.TLS.CA, srv.TLS.ClientCert, ""},
		{srv.TLS.ClientKey, "", ""}, // no certificate in it
	} {
		if _, err := spades.Dial(srv.Address, spades.WithTLSFiles(files[0], files[1], files[2])); err == nil {
			t.Errorf("WithTLSFiles%q: Dial did not fail", files)
		}
	}
}

// The README's TLS example builds and runs against the TLS server.
func TestTLSExampleRuns(t *testing.T) {
	srv := tlsServer(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "tls")
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./examples/tls").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "-addr", srv.Address, "-operator-addr", srv.Operator,
		"-ca", srv.TLS.CA, "-cert", srv.TLS.ClientCert, "-key", srv.TLS.ClientKey,
		"-operator-token", srv.OperatorToken).CombinedOutput()
	if err != nil {
		t.Fatalf("examples/tls: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "seat 0 claimed over TLS") || !strings.Contains(string(out), "spectating: ") {
		t.Fatalf("examples/tls printed:\n%s", out)
	}
}
