// Command tls creates a private match over the operator port (mutual TLS:
// a client certificate the server's --tls-client-ca signed), claims its
// human seat over the players' TLS port, and watches it with the match's
// spectator token.
//
//	go run ./examples/tls -addr localhost:50051 -operator-addr localhost:50052 \
//	  -ca ca.crt -cert operator.crt -key operator.key -operator-token "$SPADES_OPERATOR_TOKEN"
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

func main() {
	addr := flag.String("addr", "localhost:50051", "the players' port (TLS)")
	operatorAddr := flag.String("operator-addr", "localhost:50052", "the operator port (mutual TLS)")
	ca := flag.String("ca", "ca.crt", "PEM: the CA that signed the server's certificate")
	cert := flag.String("cert", "operator.crt", "PEM: the operator's client certificate")
	key := flag.String("key", "operator.key", "PEM: its private key")
	token := flag.String("operator-token", os.Getenv("SPADES_OPERATOR_TOKEN"), "the operator credential")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, *addr, *operatorAddr, *ca, *cert, *key, *token); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, operatorAddr, ca, cert, key, operatorToken string) error {
	// The operator: the CA to trust the server, and a client certificate.
	operator, err := spades.Dial(operatorAddr,
		spades.WithTLSFiles(ca, cert, key), spades.WithOperatorToken(operatorToken))
	if err != nil {
		return err
	}
	defer operator.Close()
	// A player: the CA only (no client certificate on the players' port).
	player, err := spades.Dial(addr, spades.WithTLSFiles(ca, "", ""))
	if err != nil {
		return err
	}
	defer player.Close()

	created, err := operator.CreateMatch(ctx, &spadesv1.CreateMatchRequest{
		Seats: []*spadesv1.SeatConfig{
			{Name: "You"},
			{Name: "West", Bot: true}, {Name: "North", Bot: true}, {Name: "East", Bot: true},
		},
		Spectators: spadesv1.Spectators_SPECTATORS_TOKEN, // watched with its token only
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	claimed, err := player.Seat(created.GetSeatTokens()[0].GetToken()).Claim(ctx)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	fmt.Printf("seat %d claimed over TLS\n", claimed.GetSeat())

	// Spectate is not wrapped: the generated stub, with the spectator token.
	watch, err := player.Raw().Spectate(spades.WithCredential(ctx, created.GetSpectatorToken()),
		&spadesv1.SpectateRequest{MatchId: created.GetMatch().GetMatchId()})
	if err != nil {
		return err
	}
	first, err := watch.Recv()
	if err != nil {
		return fmt.Errorf("spectate: %w", err)
	}
	fmt.Printf("spectating: %d events so far\n", len(first.GetEvents()))
	return nil
}
