// Command playhand creates a match against three bots and plays its first
// hand, taking the first legal action at each turn.
//
//	go run ./examples/playhand -addr localhost:50051 -operator-token demo-operator-token
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

func main() {
	addr := flag.String("addr", "localhost:50051", "the server's address")
	token := flag.String("operator-token", os.Getenv("SPADES_OPERATOR_TOKEN"), "the operator credential")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := playHand(ctx, *addr, *token); err != nil {
		log.Fatal(err)
	}
}

func playHand(ctx context.Context, addr, operatorToken string) error {
	client, err := spades.Dial(addr, spades.WithPlaintext(), spades.WithOperatorToken(operatorToken))
	if err != nil {
		return err
	}
	defer client.Close()

	created, err := client.CreateMatch(ctx, &spadesv1.CreateMatchRequest{
		Ruleset: &spadesv1.Ruleset{Preset: "classic"},
		Seed:    42, HasSeed: true,
		Seats: []*spadesv1.SeatConfig{
			{Name: "You"},
			{Name: "West", Bot: true, BotLevel: spadesv1.BotLevel_BOT_LEVEL_EASY},
			{Name: "North", Bot: true, BotLevel: spadesv1.BotLevel_BOT_LEVEL_NORMAL},
			{Name: "East", Bot: true, BotLevel: spadesv1.BotLevel_BOT_LEVEL_HARD},
		},
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	seat := client.Seat(created.GetSeatTokens()[0].GetToken())
	if _, err := seat.Claim(ctx); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	session, err := seat.Open(ctx, 0) // every event from the first
	if err != nil {
		return err
	}
	defer session.Close(context.Background())

	for {
		ev, err := session.Next(ctx)
		if err != nil {
			return err
		}
		switch k := ev.GetKind().(type) {
		case *spadesv1.MatchEvent_TrickWon:
			fmt.Printf("trick %d won by seat %d\n", k.TrickWon.GetTrickNumber(), k.TrickWon.GetWinner())
		case *spadesv1.MatchEvent_HandScored:
			for _, side := range k.HandScored.GetSides() {
				fmt.Printf("side %d: bid %d, took %d, %d points\n",
					side.GetSide(), side.GetContract(), side.GetTricks(), side.GetHandPoints())
			}
			return nil
		}
		if session.Buffered() > 0 {
			continue // decide on the latest events
		}
		view, err := seat.View(ctx)
		if err != nil {
			return err
		}
		if len(view.GetLegalActions()) == 0 {
			continue // not our turn: the bots' moves are on their way
		}
		action := view.GetLegalActions()[0] // a real player chooses here
		// expected_seq: refused if we have not seen every event before our turn.
		_, err = session.Act(ctx, action, spades.WithExpectedSeq(ev.GetSeq()))
		var refusal *spades.Error
		if errors.As(err, &refusal) && refusal.Reason == "STALE_SEQUENCE" {
			continue // the events we missed are coming: look again after them
		}
		if err != nil {
			return fmt.Errorf("act: %w", err)
		}
	}
}
