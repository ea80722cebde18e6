// Command quickplay asks for a quick play game with a player credential (the
// JWT the game's identity provider gave the player), waits until the
// matchmaker seats it (bots fill the seats nobody takes in time), then plays
// the seat's first hand, taking the first legal action at each turn.
//
//	go run ./examples/quickplay -addr localhost:50051 -credential "$SPADES_PLAYER_CREDENTIAL"
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
	credential := flag.String("credential", os.Getenv("SPADES_PLAYER_CREDENTIAL"), "the player credential (a JWT)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := quickPlay(ctx, *addr, *credential); err != nil {
		log.Fatal(err)
	}
}

func quickPlay(ctx context.Context, addr, credential string) error {
	client, err := spades.Dial(addr, spades.WithPlaintext())
	if err != nil {
		return err
	}
	defer client.Close()
	player := client.Player(credential)

	ticket, err := player.QuickPlay(ctx, &spadesv1.Ruleset{Preset: "classic"})
	if err != nil {
		return fmt.Errorf("quick play: %w", err)
	}
	fmt.Println("searching for a table...")
	placement, err := player.AwaitPlacement(ctx, ticket.GetTicketId())
	if err != nil {
		// Interrupted while searching: withdraw the ticket.
		_, _ = player.CancelTicket(context.Background(), ticket.GetTicketId())
		return fmt.Errorf("placement: %w", err)
	}
	for _, s := range placement.GetTable().GetSeats() {
		fmt.Printf("seat %d: %s\n", s.GetSeat(), s.GetName())
	}
	fmt.Printf("placed at seat %d of match %s\n", placement.GetSeat(), placement.GetMatchId())

	// The placement's seat token plays as any seat token does.
	seat := client.Seat(placement.GetSeatToken())
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
			continue // not our turn
		}
		action := view.GetLegalActions()[0] // a real player chooses here
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
