// Command load drives the edge (or any spades.v1 Play server with derived
// seat tokens): N tables of four seats, each seat on its own connection with
// its own Play call, each acting on its turn with a legal action it computes
// from the events it receives (classic rules: a random bid of 1 to 4, a random
// legal card). Its command line and output follow bench/peer/colyseus/loadgen.mjs,
// so the same driver reads both:
//
//	load --addr 127.0.0.1:7000 --tables N --think-ms T --warmup-s W --seconds S \
//	     --seed K --mode load|hold [--key bench-edge] [--noop]
//
// stdout carries JSON lines only ({"event": "ready"}, "measure-start",
// "measure-end" with the figures; in hold mode "connected", then "disconnected"
// after a "disconnect" line on stdin); diagnostics go to stderr.
//
// Latency: acting = the action sent -> its result on the acting seat's call;
// others = the action sent -> its event on each other seat's call. With
// --think-ms T a seat waits uniformly 0.5T..1.5T before acting, and each
// table's first action waits 0..56T.
package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

var (
	addr     = flag.String("addr", "127.0.0.1:7000", "the Play server (the edge)")
	tablesN  = flag.Int("tables", 1, "tables of four seats")
	thinkMs  = flag.Float64("think-ms", 0, "mean think time before each action")
	warmupS  = flag.Float64("warmup-s", 2, "unmeasured seconds before the window")
	seconds  = flag.Float64("seconds", 10, "the measured window")
	seed     = flag.Uint64("seed", 1, "random seed")
	mode     = flag.String("mode", "load", "load | hold")
	key      = flag.String("key", "bench-edge", "the key seat tokens are derived with (core.py --key)")
	noop     = flag.Bool("noop", false, "the core answers with fixed events: take turns in seat order")
	connects = flag.Int("connect-concurrency", 64, "seats connecting at once")
	bdp      = flag.Bool("bdp", false, "grpc-go's BDP estimation (a PING per read burst); off: fixed 1 MiB windows")
)

var (
	playing    atomic.Bool // seats act once every seat is connected
	collecting atomic.Bool // inside the measured window
	closing    atomic.Bool
	errorsN    atomic.Int64
	refusedN   atomic.Int64
)

func note(format string, args ...any) { fmt.Fprintf(os.Stderr, "load: "+format+"\n", args...) }

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

// -- cards: engine index suit*16 + rank (suit 0..3 clubs..spades, rank 0..12 2..A)

const spades = 3

func cardOf(c *spadesv1.Card) int { return (int(c.GetSuit())-1)*16 + int(c.GetRank()) - 2 }

func cardPb(c int) *spadesv1.Card {
	return &spadesv1.Card{Suit: spadesv1.Suit(c/16 + 1), Rank: spadesv1.Rank(c%16 + 2)}
}

const suitMask = uint64(0x1FFF)

// -- tables and seats ---------------------------------------------------------------

type sent struct {
	t        time.Time
	seat     int
	inWindow bool
	seen     int
}

type table struct {
	index  int
	id     string
	mu     sync.Mutex
	sends  map[int]*sent // action number -> when and by whom it was sent
	first  bool          // the first action waits the stagger, not the think time
	acting []float64
	others []float64
	hands  int
	seats  [4]*seat
}

const (
	phaseNone = iota
	phaseBidding
	phasePlaying
)

type seat struct {
	t      *table
	idx    int
	cc     *grpc.ClientConn
	stream grpc.BidiStreamingClient[spadesv1.PlayRequest, spadesv1.PlayResponse]
	cancel context.CancelFunc
	rng    *rand.Rand
	opened chan struct{} // closed at the first message

	mu        sync.Mutex // the state below: the receiver and the start kick
	phase     int
	dealer    int
	toAct     int
	hand      uint64
	led       int // suit led in the current trick, -1 when leading
	broken    bool
	lastSeq   uint64
	actions   int // action events (bids and cards) seen on this table
	pending   int // the action number this seat has scheduled or sent, 0 if none (-1: wait)
	nextID    int
	gotOpened bool
}

func token(tableID string, seat int) string {
	m := hmac.New(sha256.New, []byte(*key))
	fmt.Fprintf(m, "%s:%d", tableID, seat)
	return tableID + "." + hex.EncodeToString(m.Sum(nil))[:32]
}

func (s *seat) connect() error {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if !*bdp {
		opts = append(opts, grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20))
	}
	cc, err := grpc.NewClient(*addr, opts...)
	if err != nil {
		return err
	}
	s.cc = cc
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token(s.t.id, s.idx))
	stream, err := spadesv1.NewSpadesServiceClient(cc).Play(ctx)
	if err != nil {
		return err
	}
	s.stream = stream
	open := &spadesv1.PlayRequest{Kind: &spadesv1.PlayRequest_Open{Open: &spadesv1.PlayOpen{MatchId: s.t.id}}}
	if err := stream.Send(open); err != nil {
		return err
	}
	go s.receive()
	return nil
}

func (s *seat) receive() {
	for {
		msg, err := s.stream.Recv()
		if err != nil {
			if !closing.Load() {
				errorsN.Add(1)
				note("table %d seat %d: %v", s.t.index, s.idx, err)
			}
			return
		}
		now := time.Now()
		s.mu.Lock()
		s.onEvents(now, msg.Events)
		s.onResults(now, msg.Results)
		if !s.gotOpened {
			s.gotOpened = true
			close(s.opened)
		}
		s.maybeAct()
		s.mu.Unlock()
	}
}

func (s *seat) onEvents(now time.Time, events []*spadesv1.MatchEvent) {
	t := s.t
	for _, ev := range events {
		s.lastSeq = ev.GetSeq()
		actor := -1
		switch k := ev.Kind.(type) {
		case *spadesv1.MatchEvent_HandStarted:
			s.dealer = int(k.HandStarted.GetDealer())
			s.toAct = (s.dealer + 1) % 4
			s.phase, s.led, s.broken = phaseBidding, -1, false
			if *noop {
				s.phase = phasePlaying
			}
		case *spadesv1.MatchEvent_HandShown:
			if int(k.HandShown.GetSeat()) == s.idx {
				s.hand = 0
				for _, c := range k.HandShown.GetCards() {
					s.hand |= 1 << cardOf(c)
				}
			}
		case *spadesv1.MatchEvent_BidMade:
			actor = int(k.BidMade.GetSeat())
			s.toAct = (actor + 1) % 4
		case *spadesv1.MatchEvent_BiddingClosed:
			s.phase, s.toAct = phasePlaying, (s.dealer+1)%4
		case *spadesv1.MatchEvent_CardPlayed:
			actor = int(k.CardPlayed.GetSeat())
			c := cardOf(k.CardPlayed.GetCard())
			if s.led < 0 {
				s.led = c / 16
			}
			if c/16 == spades {
				s.broken = true
			}
			if actor == s.idx {
				s.hand &^= 1 << c
			}
			s.toAct = (actor + 1) % 4
		case *spadesv1.MatchEvent_TrickWon:
			s.led, s.toAct = -1, int(k.TrickWon.GetWinner())
		case *spadesv1.MatchEvent_HandScored:
			s.phase = phaseNone
			if s.idx == 0 && collecting.Load() {
				t.mu.Lock()
				t.hands++
				t.mu.Unlock()
			}
		case *spadesv1.MatchEvent_MatchEnded:
			s.phase = phaseNone // the core deals a new match on the same calls
		}
		if actor < 0 {
			continue
		}
		s.actions++
		if actor == s.idx {
			continue // the actor's latency is taken at its result
		}
		t.mu.Lock()
		if rec := t.sends[s.actions]; rec != nil {
			if rec.inWindow && collecting.Load() {
				t.others = append(t.others, ms(now.Sub(rec.t)))
			}
			if rec.seen++; rec.seen == 4 {
				delete(t.sends, s.actions)
			}
		}
		t.mu.Unlock()
	}
}

func (s *seat) onResults(now time.Time, results []*spadesv1.ActionResult) {
	t := s.t
	for _, r := range results {
		n := s.pending
		s.pending = 0
		if r.GetError() != nil {
			refusedN.Add(1)
			note("table %d seat %d: action %s refused: %v", t.index, s.idx, r.GetActionId(), r.GetError().GetMessage())
			t.mu.Lock()
			delete(t.sends, n)
			t.mu.Unlock()
			// Only legal actions are sent, so this is a bug: try again later, not in a loop.
			s.pending = -1
			time.AfterFunc(50*time.Millisecond, func() {
				s.mu.Lock()
				s.pending = 0
				s.maybeAct()
				s.mu.Unlock()
			})
			continue
		}
		t.mu.Lock()
		if rec := t.sends[n]; rec != nil {
			if rec.inWindow && collecting.Load() {
				t.acting = append(t.acting, ms(now.Sub(rec.t)))
			}
			if rec.seen++; rec.seen == 4 {
				delete(t.sends, n)
			}
		}
		t.mu.Unlock()
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// maybeAct decides the seat's action when it is its turn and schedules it; the
// state cannot change meanwhile (the table waits for this seat). s.mu held.
func (s *seat) maybeAct() {
	if !playing.Load() || closing.Load() || s.pending != 0 || s.toAct != s.idx {
		return
	}
	var action *spadesv1.Action
	switch s.phase {
	case phaseBidding:
		bid := &spadesv1.BidAction{Tricks: int32(1 + s.rng.IntN(4))}
		action = &spadesv1.Action{Kind: &spadesv1.Action_Bid{Bid: bid}}
	case phasePlaying:
		c := 0 // --noop: any card, the core does not read it
		if !*noop {
			c = s.legalCard()
		}
		action = &spadesv1.Action{Kind: &spadesv1.Action_PlayCard{PlayCard: &spadesv1.PlayCardAction{Card: cardPb(c)}}}
	default:
		return
	}
	n := s.actions + 1
	s.pending = n
	s.nextID++
	expected := s.lastSeq
	req := &spadesv1.PlayRequest{Kind: &spadesv1.PlayRequest_Action{Action: &spadesv1.PlayAction{
		ActionId: fmt.Sprintf("a%d", s.nextID), Action: action, ExpectedSeq: &expected,
	}}}
	if *noop {
		req.GetAction().ExpectedSeq = nil
	}
	t := s.t
	delay := 0.0
	if *thinkMs > 0 {
		t.mu.Lock()
		if t.first {
			delay = s.rng.Float64() * 56 * *thinkMs
		} else {
			delay = *thinkMs * (0.5 + s.rng.Float64())
		}
		t.first = false
		t.mu.Unlock()
	}
	send := func() {
		if closing.Load() {
			return
		}
		t.mu.Lock()
		t.sends[n] = &sent{t: time.Now(), seat: s.idx, inWindow: collecting.Load()}
		t.mu.Unlock()
		if err := s.stream.Send(req); err != nil && !closing.Load() {
			errorsN.Add(1)
			note("table %d seat %d: send: %v", t.index, s.idx, err)
		}
	}
	if delay > 0 {
		time.AfterFunc(time.Duration(delay*float64(time.Millisecond)), send)
	} else {
		go send()
	}
}

// legalCard: follow suit if able; a lead is a spade only once spades are
// broken or when the hand holds nothing else (classic rules).
func (s *seat) legalCard() int {
	hand := s.hand
	var m uint64
	if s.led >= 0 {
		m = hand & (suitMask << (16 * s.led))
	} else if !s.broken {
		m = hand &^ (suitMask << (16 * spades))
	}
	if m == 0 {
		m = hand
	}
	cards := make([]int, 0, 13)
	for c := 0; c < 64; c++ {
		if m>>c&1 == 1 {
			cards = append(cards, c)
		}
	}
	if len(cards) == 0 {
		return 0 // no hand known: the core refuses it, and the refusal is counted
	}
	return cards[s.rng.IntN(len(cards))]
}

func percentile(samples []float64, p float64) any {
	if len(samples) == 0 {
		return nil
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	i := min(len(s)-1, max(0, int(math.Ceil(p*float64(len(s))))-1))
	return math.Round(s[i]*1000) / 1000
}

func connectAll(tables []*table) error {
	sem := make(chan struct{}, *connects)
	var wg sync.WaitGroup
	var failed atomic.Value
	for _, t := range tables {
		for _, s := range t.seats {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := s.connect(); err != nil {
					failed.Store(err)
				}
			}()
		}
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	deadline := time.After(60 * time.Second)
	for _, t := range tables {
		for _, s := range t.seats {
			select {
			case <-s.opened:
			case <-deadline:
				return fmt.Errorf("table %d seat %d: nothing received after 60 s", t.index, s.idx)
			}
		}
	}
	return nil
}

func closeAll(tables []*table) {
	closing.Store(true)
	for _, t := range tables {
		for _, s := range t.seats {
			if s.cancel != nil {
				s.cancel()
			}
			if s.cc != nil {
				s.cc.Close()
			}
		}
	}
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *tablesN < 1 || *thinkMs < 0 || *seconds <= 0 || (*mode != "load" && *mode != "hold") {
		note("bad arguments")
		os.Exit(2)
	}
	tables := make([]*table, *tablesN)
	for i := range tables {
		t := &table{index: i, id: fmt.Sprintf("t%d", i), sends: make(map[int]*sent), first: true}
		for j := range t.seats {
			t.seats[j] = &seat{
				t: t, idx: j, opened: make(chan struct{}), led: -1,
				rng: rand.New(rand.NewPCG(*seed, uint64(i*4+j))),
			}
		}
		tables[i] = t
	}
	if err := connectAll(tables); err != nil {
		note("connecting failed: %v", err)
		os.Exit(1)
	}
	if *mode == "hold" {
		emit(map[string]any{"event": "connected", "tables": len(tables)})
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			switch in.Text() {
			case "disconnect":
				closeAll(tables)
				emit(map[string]any{"event": "disconnected"})
			case "exit":
				os.Exit(0)
			}
		}
		os.Exit(0)
	}
	emit(map[string]any{"event": "ready", "tables": len(tables), "seats": 4 * len(tables)})
	playing.Store(true)
	for _, t := range tables {
		for _, s := range t.seats {
			s.mu.Lock()
			s.maybeAct()
			s.mu.Unlock()
		}
	}
	time.Sleep(time.Duration(*warmupS * float64(time.Second)))
	errorsN.Store(0)
	refusedN.Store(0)
	collecting.Store(true)
	emit(map[string]any{"event": "measure-start"})
	time.Sleep(time.Duration(*seconds * float64(time.Second)))
	collecting.Store(false)
	var acting, others []float64
	hands := 0
	for _, t := range tables {
		t.mu.Lock()
		acting = append(acting, t.acting...)
		others = append(others, t.others...)
		hands += t.hands
		t.mu.Unlock()
	}
	emit(map[string]any{
		"event":         "measure-end",
		"actions":       len(acting),
		"acting_p50_ms": percentile(acting, 0.5),
		"acting_p99_ms": percentile(acting, 0.99),
		"others_p50_ms": percentile(others, 0.5),
		"others_p99_ms": percentile(others, 0.99),
		"others":        len(others),
		"errors":        errorsN.Load(),
		"refused":       refusedN.Load(),
		"hands":         hands,
	})
	closeAll(tables)
	os.Exit(0)
}
