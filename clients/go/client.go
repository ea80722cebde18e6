// Package spades is a client of the Spades match service (spades.v1): operator
// calls, a seat's calls, and a seat's Session on the bidirectional Play call,
// which resumes by itself after a dropped connection; and the lobby
// (LobbyService: tables, invitations, quick play, rematch) with a player
// credential.
//
//	c, err := spades.Dial("localhost:50051", spades.WithPlaintext(), spades.WithOperatorToken(op))
//	created, err := c.CreateMatch(ctx, &spadesv1.CreateMatchRequest{...})
//	seat := c.Seat(created.GetSeatTokens()[0].GetToken())
//	_, err = seat.Claim(ctx)
//	session, err := seat.Open(ctx, 0)
//	ev, err := session.Next(ctx)                 // events in sequence order
//	res, err := session.Act(ctx, action)         // waits for the ActionResult
//
// A player (a JWT from the game's identity provider) finds a seat in the
// lobby, and its seat token plays as one from CreateMatch does:
//
//	player := c.Player(jwt)
//	ticket, err := player.QuickPlay(ctx, nil)    // classic rules
//	placement, err := player.AwaitPlacement(ctx, ticket.GetTicketId())
//	session, err := c.Seat(placement.GetSeatToken()).Open(ctx, 0)
//
// Refusals are *Error values (errors.As) with the gRPC code, the ErrorInfo
// reason and rule, and the field violations. The generated messages and stubs
// are in the package spadesv1 (gen/spades/v1).
package spades

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// DefaultCallTimeout bounds a unary call whose context has no deadline.
const DefaultCallTimeout = 10 * time.Second

// Client is a connection to a spades server. It is safe for concurrent use;
// one Client can serve many seats and sessions.
type Client struct {
	conn  *grpc.ClientConn
	rpc   spadesv1.SpadesServiceClient
	lobby spadesv1.LobbyServiceClient
	cfg   config
}

type config struct {
	creds         credentials.TransportCredentials
	operatorToken string
	callTimeout   time.Duration
	backoff       Backoff
	closeTimeout  time.Duration
	dialOptions   []grpc.DialOption
	err           error // an option that could not be applied, returned by Dial
}

// Option configures Dial.
type Option func(*config)

// WithPlaintext connects without TLS (a local server, or one on a network you
// trust: the credentials travel in clear).
func WithPlaintext() Option {
	return func(c *config) { c.creds = insecure.NewCredentials() }
}

// WithTLS connects with TLS (the default, with the system's roots when cfg is nil).
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.creds = credentials.NewTLS(cfg)
	}
}

// WithTLSFiles connects with TLS, trusting the CA certificates of the PEM
// file caFile ("": the system's roots), and, when certFile and keyFile are
// set (PEM; both or neither), presenting that client certificate: mutual TLS,
// which a server started with --tls-client-ca requires on its operator port.
// The files are read by Dial, which returns the error if one cannot be used.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(c *config) {
		cfg, err := LoadTLSConfig(caFile, certFile, keyFile)
		if err != nil {
			c.err = err
			return
		}
		c.creds = credentials.NewTLS(cfg)
	}
}

// LoadTLSConfig is the tls.Config of WithTLSFiles, for WithTLS when more of
// it is to be set (ServerName for a server reached by another name, ...).
func LoadTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("spades: TLS CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("spades: TLS CA: no PEM certificate in %s", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("spades: TLS client certificate: certFile and keyFile go together")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("spades: TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// WithOperatorToken sets the operator credential used by CreateMatch,
// GetMatch, ReissueSeatToken and SetSpectators.
func WithOperatorToken(token string) Option {
	return func(c *config) { c.operatorToken = token }
}

// WithCallTimeout sets the deadline given to a unary call whose context has
// none (DefaultCallTimeout; 0: none); a long poll gets its wait on top. A
// Session, and a lobby or table or ticket watch, is bounded only by its context.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) { c.callTimeout = d }
}

// WithBackoff sets how sessions and watches reconnect, and how reads
// (GetView, GetMatch, the lobby's) and idempotent calls (SubmitAction,
// JoinTable, QuickPlay, CancelTicket, Rematch, ...) are retried, after the connection fails.
func WithBackoff(b Backoff) Option {
	return func(c *config) { c.backoff = b.withDefaults() }
}

// WithCloseTimeout bounds how long Session.Close waits for the results of the
// actions already sent when its context has no deadline (default 5 s).
func WithCloseTimeout(d time.Duration) Option {
	return func(c *config) { c.closeTimeout = d }
}

// WithDialOptions adds grpc.DialOptions (interceptors, ...), after the
// defaults: a grpc.WithKeepaliveParams here replaces the default keepalive
// (a ping after 30 s without traffic on a connection with a call open).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOptions = append(c.dialOptions, opts...) }
}

// Dial makes a Client for address ("host:port"). It does not connect yet: the
// first call does, and every call after a failure reconnects.
func Dial(address string, opts ...Option) (*Client, error) {
	cfg := config{callTimeout: DefaultCallTimeout, backoff: DefaultBackoff, closeTimeout: 5 * time.Second}
	WithTLS(nil)(&cfg)
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(cfg.creds),
		// A connection that died without a reset (a phone off the network)
		// is noticed within Time+Timeout while a call is open, and the session
		// resumes. 30 s respects the server's --min-client-ping-seconds (10).
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}, cfg.dialOptions...)
	conn, err := grpc.NewClient(address, dial...)
	if err != nil {
		return nil, fmt.Errorf("spades: dial %s: %w", address, err)
	}
	return &Client{conn: conn, rpc: spadesv1.NewSpadesServiceClient(conn), lobby: spadesv1.NewLobbyServiceClient(conn), cfg: cfg}, nil
}

// Close closes the connection; sessions on it end.
func (c *Client) Close() error { return c.conn.Close() }

// Raw is the generated stub, for the calls this package does not wrap.
func (c *Client) Raw() spadesv1.SpadesServiceClient { return c.rpc }

// callContext gives ctx the default deadline (if it has none) and the credential.
func (c *Client) callContext(ctx context.Context, token string) (context.Context, context.CancelFunc) {
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok && c.cfg.callTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.cfg.callTimeout)
	}
	return withToken(ctx, token), cancel
}

// WithCredential returns ctx carrying token as the call's credential
// (authorization: Bearer token), for the calls made with Raw(): a spectator
// token on Spectate or PollEvents, say.
func WithCredential(ctx context.Context, token string) context.Context {
	return withToken(ctx, token)
}

func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// CreateMatch creates a match (operator credential). Not retried: a retry
// after a lost answer would create a second match.
func (c *Client) CreateMatch(ctx context.Context, req *spadesv1.CreateMatchRequest) (*spadesv1.CreateMatchResponse, error) {
	ctx, cancel := c.callContext(ctx, c.cfg.operatorToken)
	defer cancel()
	resp, err := c.rpc.CreateMatch(ctx, req)
	return resp, convert(ctx, err)
}

// GetMatch returns a match's public summary (operator credential).
func (c *Client) GetMatch(ctx context.Context, matchID string) (*spadesv1.MatchSummary, error) {
	ctx, cancel := c.callContext(ctx, c.cfg.operatorToken)
	defer cancel()
	var resp *spadesv1.GetMatchResponse
	err := retry(ctx, c.cfg.backoff, func() (err error) {
		resp, err = c.rpc.GetMatch(ctx, &spadesv1.GetMatchRequest{MatchId: matchID})
		return err
	})
	return resp.GetMatch(), convert(ctx, err)
}

// ReissueSeatToken replaces a human seat's token (operator credential): the
// old token is refused from then on, the streams opened with it end
// (UNAUTHENTICATED, reason TOKEN_REVOKED) and the seat is OPEN again. The
// response has the new token. Retried while the server is unreachable: a
// repeat replaces the token once more, and its answer holds the current one.
func (c *Client) ReissueSeatToken(ctx context.Context, matchID string, seat int32) (*spadesv1.ReissueSeatTokenResponse, error) {
	ctx, cancel := c.callContext(ctx, c.cfg.operatorToken)
	defer cancel()
	var resp *spadesv1.ReissueSeatTokenResponse
	err := retry(ctx, c.cfg.backoff, func() (err error) {
		resp, err = c.rpc.ReissueSeatToken(ctx, &spadesv1.ReissueSeatTokenRequest{MatchId: matchID, Seat: seat})
		return err
	})
	return resp, convert(ctx, err)
}

// SetSpectators changes who may watch a match (operator credential). With
// SPECTATORS_TOKEN the response has a new spectator token (an earlier one is
// refused from then on). Retried as ReissueSeatToken.
func (c *Client) SetSpectators(ctx context.Context, matchID string, spectators spadesv1.Spectators) (*spadesv1.SetSpectatorsResponse, error) {
	ctx, cancel := c.callContext(ctx, c.cfg.operatorToken)
	defer cancel()
	var resp *spadesv1.SetSpectatorsResponse
	err := retry(ctx, c.cfg.backoff, func() (err error) {
		resp, err = c.rpc.SetSpectators(ctx, &spadesv1.SetSpectatorsRequest{MatchId: matchID, Spectators: spectators})
		return err
	})
	return resp, convert(ctx, err)
}

// Seat is what a seat token does. Get one with Client.Seat.
type Seat struct {
	c       *Client
	token   string
	matchID string
	// seen is the newest sequence number seen through this Seat (its views,
	// its actions' results, its sessions' events): View asks for a view at
	// least as new (min_seq), so that a server replica a moment behind the
	// one the client left answers only once it has caught up.
	seen atomic.Uint64
}

// SeenSeq is the newest sequence number this Seat has seen.
func (s *Seat) SeenSeq() uint64 { return s.seen.Load() }

func (s *Seat) saw(seq uint64) {
	for {
		old := s.seen.Load()
		if seq <= old || s.seen.CompareAndSwap(old, seq) {
			return
		}
	}
}

// Seat returns the calls of a seat token (as CreateMatch returned it,
// "<match_id>.<secret>").
func (c *Client) Seat(token string) *Seat {
	matchID, _, _ := strings.Cut(token, ".")
	return &Seat{c: c, token: token, matchID: matchID}
}

// MatchID is the match of the seat token.
func (s *Seat) MatchID() string { return s.matchID }

// Claim takes the seat (back) from a bot; it returns the seat's number and view.
func (s *Seat) Claim(ctx context.Context) (*spadesv1.ClaimSeatResponse, error) {
	ctx, cancel := s.c.callContext(ctx, s.token)
	defer cancel()
	resp, err := s.c.rpc.ClaimSeat(ctx, &spadesv1.ClaimSeatRequest{MatchId: s.matchID})
	return resp, convert(ctx, err)
}

// Leave leaves the seat: a bot plays it until it is claimed again.
func (s *Seat) Leave(ctx context.Context) (*spadesv1.LeaveSeatResponse, error) {
	ctx, cancel := s.c.callContext(ctx, s.token)
	defer cancel()
	resp, err := s.c.rpc.LeaveSeat(ctx, &spadesv1.LeaveSeatRequest{MatchId: s.matchID})
	return resp, convert(ctx, err)
}

// View is the match as the seat may see it, with its legal actions (GetView;
// retried with backoff while the server is unreachable), at least as new as
// SeenSeq.
func (s *Seat) View(ctx context.Context) (*spadesv1.SeatView, error) {
	return s.ViewAfter(ctx, s.SeenSeq())
}

// ViewAfter is View at least as new as minSeq; a minSeq the match has not
// reached is refused (OUT_OF_RANGE, reason SEQ_AHEAD).
func (s *Seat) ViewAfter(ctx context.Context, minSeq uint64) (*spadesv1.SeatView, error) {
	ctx, cancel := s.c.callContext(ctx, s.token)
	defer cancel()
	var resp *spadesv1.GetViewResponse
	req := &spadesv1.GetViewRequest{MatchId: s.matchID, MinSeq: minSeq}
	err := retry(ctx, s.c.cfg.backoff, func() (err error) {
		resp, err = s.c.rpc.GetView(ctx, req)
		return err
	})
	s.saw(resp.GetView().GetAsOfSeq())
	return resp.GetView(), convert(ctx, err)
}

// Submit acts for the seat with a unary call (for when no Session is open);
// it is retried with the same action id while the server is unreachable, so
// the action is applied at most once.
func (s *Seat) Submit(ctx context.Context, action *spadesv1.Action, opts ...ActOption) (*spadesv1.SubmitActionResponse, error) {
	o := actOptions(opts)
	ctx, cancel := s.c.callContext(ctx, s.token)
	defer cancel()
	req := &spadesv1.SubmitActionRequest{MatchId: s.matchID, ActionId: o.id, Action: action, ExpectedSeq: o.expectedSeq}
	var resp *spadesv1.SubmitActionResponse
	err := retry(ctx, s.c.cfg.backoff, func() (err error) {
		resp, err = s.c.rpc.SubmitAction(ctx, req)
		return err
	})
	s.saw(resp.GetLastSeq())
	return resp, convert(ctx, err)
}

// ActOption sets a field of an action sent with Session.Send, Session.Act or
// Seat.Submit.
type ActOption func(*actOpts)

type actOpts struct {
	id          string
	expectedSeq *uint64
}

// WithActionID sends the action with this id (1 to 64 characters) instead of
// a fresh one: the server answers a repeated id with the first result.
func WithActionID(id string) ActOption { return func(o *actOpts) { o.id = id } }

// WithExpectedSeq sends the last sequence number the caller has seen: the
// server refuses the action (FAILED_PRECONDITION, STALE_SEQUENCE) if the seat
// may see a later event.
func WithExpectedSeq(seq uint64) ActOption { return func(o *actOpts) { o.expectedSeq = &seq } }

func actOptions(opts []ActOption) actOpts {
	var o actOpts
	for _, f := range opts {
		f(&o)
	}
	if o.id == "" {
		o.id = NewActionID()
	}
	return o
}

// NewActionID returns a fresh random action id (a UUID version 4 string).
func NewActionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// retryable tells whether a failed call may succeed if made again: the server
// was unreachable or the connection broke (no ErrorInfo), or the server said
// UNAVAILABLE (shutting down, a match reloading).
func retryable(err error) bool {
	e, ok := convert(nil, err).(*Error)
	if !ok {
		return false
	}
	switch e.Code {
	case codes.Unavailable:
		return true
	case codes.Internal, codes.Unknown:
		return e.Reason == "" // a transport failure (RST_STREAM, a reset), not the server's answer
	}
	return false
}

// retry calls fn until it succeeds, fails for good, ctx ends, or the backoff's
// attempts are spent.
func retry(ctx context.Context, b Backoff, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt > b.MaxAttempts || ctx.Err() != nil {
			return err
		}
		if !sleep(ctx, b.delay(attempt)) {
			return err
		}
	}
}
