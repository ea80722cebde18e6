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

// The README's examples are these files, word for word (tls_test.go runs
// the second).
var exampleSources = []string{"examples/playhand/main.go", "examples/tls/main.go", "examples/quickplay/main.go",
	"examples/leaderboard/main.go"}

func TestReadmeShowsTheExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range exampleSources {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
			t.Errorf("README.md does not show %s as it is (a ```go block)", path)
		}
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

// The quick play example: placed with bots after serve.py's 1 s, it plays
// the seat's first hand.
func TestExampleQuickPlays(t *testing.T) {
	srv := server(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "quickplay")
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./examples/quickplay").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	credential := srv.credential(t, "go-example", "Example")
	out, err := exec.CommandContext(ctx, bin, "-addr", srv.Address, "-credential", credential).CombinedOutput()
	if err != nil {
		t.Fatalf("quickplay: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "placed at seat ") || !strings.Contains(text, ": Example\n") ||
		strings.Count(text, "trick ") != 13 || !strings.Contains(text, "side 1: bid") {
		t.Fatalf("quickplay printed:\n%s", text)
	}
	t.Logf("quickplay:\n%s", text)
}

// The leaderboard example, after a rated match of four players (a server of
// the test's own): two pages of two, then the player's rank and record.
func TestExampleLeaderboard(t *testing.T) {
	srv := ratedServer(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "leaderboard")
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./examples/leaderboard").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := srv.dial(t)
	players, ids, _ := ratedPlayers(t, srv, c)
	playRatedTable(t, ctx, c, players)
	for _, id := range ids {
		awaitProfile(t, ctx, players[0], id)
	}
	credential := srv.credential(t, ids[0], "Rated 0")
	out, err := exec.CommandContext(ctx, bin, "-addr", srv.Address, "-credential", credential,
		"-pool", "classic", "-page-size", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("leaderboard: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.HasPrefix(text, "classic: 4 players (1 rated games to be shown)\n") ||
		!strings.Contains(text, "   1. Rated ") || !strings.Contains(text, "   4. Rated ") ||
		!strings.Contains(text, "you: rank ") || !strings.Contains(text, "with humans: 1 matches, ") {
		t.Fatalf("leaderboard printed:\n%s", text)
	}
	t.Logf("leaderboard:\n%s", text)
}
