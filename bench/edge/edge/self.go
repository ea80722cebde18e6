package main

import (
	"strings"
	"sync"

	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
	"google.golang.org/protobuf/proto"
)

// selfAnswer is a diagnostic mode (--self-answer): the edge answers every
// action itself with fixed bytes, as core.py --noop does, without a link or a
// core. It groups a table's calls by the match id in their seat token, and the
// n-th action of a table is announced as a card played by seat n % 4, so the
// load generator's --noop seats take turns. What it measures is the edge's
// client side alone: the floor of a Go gRPC server for this load.
type selfAnswer struct {
	mu      sync.Mutex
	tables  map[string]*selfTable
	opening []byte
	events  [4][]byte
	result  []byte
}

type selfTable struct {
	conns []*conn
	n     int
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func newSelfAnswer() *selfAnswer {
	s := &selfAnswer{tables: make(map[string]*selfTable)}
	s.opening = mustMarshal(&spadesv1.PlayResponse{Events: []*spadesv1.MatchEvent{{
		Kind: &spadesv1.MatchEvent_HandStarted{HandStarted: &spadesv1.HandStarted{Dealer: 3, HandSize: 13}},
	}}})
	for seat := range s.events {
		s.events[seat] = mustMarshal(&spadesv1.PlayResponse{Events: []*spadesv1.MatchEvent{{
			Seq: 1,
			Kind: &spadesv1.MatchEvent_CardPlayed{CardPlayed: &spadesv1.CardPlayed{
				Seat: int32(seat),
				Card: &spadesv1.Card{Suit: spadesv1.Suit_SUIT_CLUBS, Rank: spadesv1.Rank_RANK_TWO},
			}},
		}}})
	}
	s.result = mustMarshal(&spadesv1.PlayResponse{Results: []*spadesv1.ActionResult{{ActionId: "noop"}}})
	return s
}

func (s *selfAnswer) open(c *conn, credential string) *selfTable {
	matchID, _, _ := strings.Cut(credential, ".")
	s.mu.Lock()
	t := s.tables[matchID]
	if t == nil {
		t = &selfTable{}
		s.tables[matchID] = t
	}
	t.conns = append(t.conns, c)
	s.mu.Unlock()
	c.push([][]byte{s.opening}, nil)
	return t
}

func (s *selfAnswer) act(c *conn, t *selfTable) {
	s.mu.Lock()
	event := s.events[t.n%4]
	t.n++
	conns := t.conns
	s.mu.Unlock()
	for _, other := range conns {
		if other == c {
			other.push([][]byte{event, s.result}, nil)
		} else {
			other.push([][]byte{event}, nil)
		}
	}
}
