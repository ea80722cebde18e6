package spades_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const exampleSource = "examples/playhand/main.go"

// The README's example is examples/playhand/main.go, word for word.
func TestReadmeShowsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(exampleSource)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Fatalf("README.md does not show %s as it is (a ```go block)", exampleSource)
	}
}

// The example builds, plays a hand against three bots and prints the score.
func TestExamplePlaysAHand(t *testing.T) {
	srv := server(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "playhand")
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./examples/playhand")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := exec.CommandContext(ctx, bin, "-addr", srv.Address, "-operator-token", srv.OperatorToken)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("playhand: %v\n%s", err, out)
	}
	text := string(out)
	if strings.Count(text, "trick ") != 13 || !strings.Contains(text, "side 0: bid") || !strings.Contains(text, "side 1: bid") {
		t.Fatalf("playhand printed:\n%s", text)
	}
	t.Logf("playhand:\n%s", text)
}
