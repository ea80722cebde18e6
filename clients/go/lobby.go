package spades

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"google.golang.org/grpc"

	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// The lobby (spades.v1.LobbyService): tables, the lobby's list, invitations,
// quick play, rematch, and rated play's leaderboards and profiles. Every
// call but Rematch carries a player credential (a Player); Rematch carries a
// seat token of the finished match (a Seat).

// LongPollWait is how long AwaitPlacement, AwaitTableStart and AwaitRematch
// ask the server to hold each long poll (the server cuts a longer wait to its
// --poll-max-wait-ms, 25 s by default).
const LongPollWait = 20 * time.Second

// ErrTicketCancelled is returned (wrapped, with the ticket's cancel_reason) by
// AwaitPlacement when the ticket was cancelled instead of placed.
var ErrTicketCancelled = errors.New("spades: ticket cancelled")

// ErrTableClosed is returned (wrapped, with the table's close_reason) by
// AwaitTableStart and AwaitRematch when the table closed instead of starting.
var ErrTableClosed = errors.New("spades: table closed")

// CredentialSource returns the player credential to send: the JWT the game's
// identity provider issued for the player (this package never makes one). It
// is asked again before every call and every reconnection of a stream, so it
// may hand out a renewed credential when the old one nears its expiry.
type CredentialSource func(ctx context.Context) (string, error)

// Player is what a player credential does: the calls of spades.v1.LobbyService
// but Rematch (which is the Seat's). Get one with Client.Player or
// Client.PlayerFunc. It is safe for concurrent use.
//
// A refused credential is an *Error with code UNAUTHENTICATED and the reason
// (CREDENTIAL_EXPIRED, BAD_SIGNATURE, CREDENTIAL_REQUIRED, ...).
type Player struct {
	c      *Client
	source CredentialSource
}

// Player returns the lobby's calls made with this player credential (a JWT,
// sent as "authorization: Bearer <jwt>").
func (c *Client) Player(credential string) *Player {
	return &Player{c: c, source: func(context.Context) (string, error) { return credential, nil }}
}

// PlayerFunc returns the lobby's calls made with the credential source gives,
// asked before each call: for credentials that the game renews.
func (c *Client) PlayerFunc(source CredentialSource) *Player {
	return &Player{c: c, source: source}
}

// RawLobby is the generated stub of spades.v1.LobbyService, for calls made
// another way (give them a credential with WithCredential).
func (c *Client) RawLobby() spadesv1.LobbyServiceClient { return c.lobby }

// unary makes one lobby call with the player credential and the Client's
// default deadline (wait more when it is a long poll), retried with backoff
// while the server is unreachable when retried is true.
func unary[Resp any](ctx context.Context, c *Client, source CredentialSource, wait time.Duration, retried bool,
	call func(ctx context.Context) (Resp, error)) (Resp, error) {
	var zero Resp
	ctx, cancel := c.pollContext(ctx, wait)
	defer cancel()
	var resp Resp
	attempt := func() error {
		token, err := source(ctx)
		if err != nil {
			return fmt.Errorf("spades: player credential: %w", err)
		}
		resp, err = call(withToken(ctx, token))
		return err
	}
	var err error
	if retried {
		err = retry(ctx, c.cfg.backoff, attempt)
	} else {
		err = attempt()
	}
	if err != nil {
		return zero, convert(ctx, err)
	}
	return resp, nil
}

// pollContext gives ctx, if it has no deadline, the Client's call timeout
// plus wait (a long poll answers after wait at the latest).
func (c *Client) pollContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.cfg.callTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.callTimeout+wait)
}

// -- tables -----------------------------------------------------------------------

// OpenTable opens a table and sits the player at req.Seat (unset: seat 0);
// the response has the table (with its invite code if invite-only) and the
// player's seat token, which plays the seat (Client.Seat) once the table has
// started. Not retried: a second OpenTable is refused (ALREADY_SEATED).
//
// req.Rated asks for a rated table: its match's result moves the players'
// ratings in the pool of its ruleset (Table.RatingPool; see Leaderboard and
// Profile). Rated with BotSeats is refused (INVALID_ARGUMENT
// RATED_WITHOUT_BOTS), and a rated table that starts with a bot seated (bots
// taking the open seats of StartTable) is played unrated (Table.Rated false).
func (p *Player) OpenTable(ctx context.Context, req *spadesv1.OpenTableRequest) (*spadesv1.OpenTableResponse, error) {
	return unary(ctx, p.c, p.source, 0, false, func(ctx context.Context) (*spadesv1.OpenTableResponse, error) {
		return p.c.lobby.OpenTable(ctx, req)
	})
}

// JoinOption sets a field of JoinTable and JoinTableByCode.
type JoinOption func(*spadesv1.JoinTableRequest)

// WithSeat asks for that seat (unset: the lowest open one).
func WithSeat(seat int32) JoinOption {
	return func(r *spadesv1.JoinTableRequest) { r.Seat = &seat }
}

// JoinTable sits the player at a public table (or one they sit at already:
// the same seat and token again, so it is retried while the server is
// unreachable). The table starts when its last seat is taken: the response's
// table is then STARTED, and its seat token plays the seat (Client.Seat).
func (p *Player) JoinTable(ctx context.Context, tableID string, opts ...JoinOption) (*spadesv1.JoinTableResponse, error) {
	return p.join(ctx, &spadesv1.JoinTableRequest{TableId: tableID}, opts)
}

// JoinTableByCode sits the player at the invite-only table of this invite
// code (case, spaces and dashes do not matter). A wrong code is NOT_FOUND
// INVITE_NOT_FOUND and counts against the player's attempts: past them,
// RESOURCE_EXHAUSTED INVITE_ATTEMPTS (Metadata["retry_after_ms"]).
func (p *Player) JoinTableByCode(ctx context.Context, inviteCode string, opts ...JoinOption) (*spadesv1.JoinTableResponse, error) {
	return p.join(ctx, &spadesv1.JoinTableRequest{InviteCode: inviteCode}, opts)
}

func (p *Player) join(ctx context.Context, req *spadesv1.JoinTableRequest, opts []JoinOption) (*spadesv1.JoinTableResponse, error) {
	for _, o := range opts {
		o(req)
	}
	return unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.JoinTableResponse, error) {
		return p.c.lobby.JoinTable(ctx, req)
	})
}

// LeaveTable stands the player up from a waiting table: the seat is open
// again and its seat token worthless. The host's leaving passes the host on;
// the last player's closes the table (CLOSED, "empty"). Not retried (a
// second call is refused, NOT_SEATED).
func (p *Player) LeaveTable(ctx context.Context, tableID string) (*spadesv1.Table, error) {
	resp, err := unary(ctx, p.c, p.source, 0, false, func(ctx context.Context) (*spadesv1.LeaveTableResponse, error) {
		return p.c.lobby.LeaveTable(ctx, &spadesv1.LeaveTableRequest{TableId: tableID})
	})
	return resp.GetTable(), err
}

// StartTable starts the host's table now: bots take the open seats. It
// returns the table, STARTED. Retried while the server is unreachable (a
// table that has started is answered as it is).
func (p *Player) StartTable(ctx context.Context, tableID string) (*spadesv1.Table, error) {
	resp, err := unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.StartTableResponse, error) {
		return p.c.lobby.StartTable(ctx, &spadesv1.StartTableRequest{TableId: tableID})
	})
	return resp.GetTable(), err
}

// PollOption makes a read a long poll: GetTable, GetTicket, PollLobby and
// Rematch.
type PollOption func(*pollOpts)

type pollOpts struct {
	after uint64
	wait  time.Duration
}

// WithAfterVersion answers at once only if the version is past v (the
// version last seen); else the call waits for a change, up to WithWait.
func WithAfterVersion(v uint64) PollOption { return func(o *pollOpts) { o.after = v } }

// WithWait waits up to d for a change (the server cuts it to its
// --poll-max-wait-ms); without it the call answers at once.
func WithWait(d time.Duration) PollOption { return func(o *pollOpts) { o.wait = d } }

func pollOptions(opts []PollOption) pollOpts {
	var o pollOpts
	for _, f := range opts {
		f(&o)
	}
	if o.wait < 0 {
		o.wait = 0
	}
	return o
}

func (o pollOpts) waitMs() int32 {
	ms := o.wait.Milliseconds()
	if ms > 1<<31-1 {
		ms = 1<<31 - 1
	}
	return int32(ms)
}

// GetTable returns a table: a public one, or one the player sits at. With
// WithAfterVersion and WithWait it is a long poll that answers once the
// table's version is past the one given, or unchanged when the wait runs out.
// Retried while the server is unreachable.
func (p *Player) GetTable(ctx context.Context, tableID string, opts ...PollOption) (*spadesv1.Table, error) {
	return p.getTable(ctx, &spadesv1.GetTableRequest{TableId: tableID}, opts)
}

// GetTableByCode returns the invite-only table of this invite code, to look
// at it before joining (a wrong code counts as in JoinTableByCode).
func (p *Player) GetTableByCode(ctx context.Context, inviteCode string, opts ...PollOption) (*spadesv1.Table, error) {
	return p.getTable(ctx, &spadesv1.GetTableRequest{InviteCode: inviteCode}, opts)
}

func (p *Player) getTable(ctx context.Context, req *spadesv1.GetTableRequest, opts []PollOption) (*spadesv1.Table, error) {
	o := pollOptions(opts)
	req.AfterVersion, req.WaitMs = o.after, o.waitMs()
	resp, err := unary(ctx, p.c, p.source, o.wait, true, func(ctx context.Context) (*spadesv1.GetTableResponse, error) {
		return p.c.lobby.GetTable(ctx, req)
	})
	return resp.GetTable(), err
}

// AwaitTableStart follows a table with GetTable long polls until it has
// started, and returns it (STARTED: the seat tokens play its match_id). A
// table that closes instead is ErrTableClosed, wrapped with its close_reason.
func (p *Player) AwaitTableStart(ctx context.Context, tableID string) (*spadesv1.Table, error) {
	return longPoll(ctx,
		func(after uint64) (*spadesv1.Table, error) {
			return p.GetTable(ctx, tableID, WithAfterVersion(after), WithWait(LongPollWait))
		},
		(*spadesv1.Table).GetVersion,
		func(table *spadesv1.Table) (bool, error) {
			switch table.GetState() {
			case spadesv1.TableState_TABLE_STATE_STARTED:
				return true, nil
			case spadesv1.TableState_TABLE_STATE_CLOSED:
				return true, fmt.Errorf("%w: %s (%s)", ErrTableClosed, table.GetTableId(), table.GetCloseReason())
			}
			return false, nil
		})
}

// minPollGap: a long poll answered unchanged sooner than this (the server cut
// its wait: the context's deadline is near) is asked again only after it.
const minPollGap = 100 * time.Millisecond

// longPoll calls poll, with the version of its last answer, until final says
// an answer is the last (or an error); an error of poll ends it at once.
func longPoll[T any](ctx context.Context, poll func(after uint64) (T, error), version func(T) uint64,
	final func(T) (bool, error)) (T, error) {
	var after uint64
	for {
		began := time.Now()
		v, err := poll(after)
		if err != nil {
			return v, err
		}
		if done, err := final(v); done || err != nil {
			return v, err
		}
		if version(v) <= after && time.Since(began) < minPollGap && !sleep(ctx, minPollGap) {
			return v, ctx.Err()
		}
		after = version(v)
	}
}

// WatchTable streams a table: as it is now, then after every change, until
// it has started or closed (then the iteration ends). A dropped connection is
// reopened with the Client's backoff, and a table already seen is skipped.
// Breaking out of the loop ends the call.
//
//	for table, err := range player.WatchTable(ctx, id) { ... }
func (p *Player) WatchTable(ctx context.Context, tableID string) iter.Seq2[*spadesv1.Table, error] {
	return func(yield func(*spadesv1.Table, error) bool) {
		var seen uint64
		follow(ctx, p.c, p.source,
			func(ctx context.Context) (grpc.ServerStreamingClient[spadesv1.WatchTableResponse], error) {
				return p.c.lobby.WatchTable(ctx, &spadesv1.WatchTableRequest{TableId: tableID})
			},
			func(m *spadesv1.WatchTableResponse) (*spadesv1.Table, bool) {
				if m.GetTable().GetVersion() <= seen {
					return nil, false
				}
				seen = m.GetTable().GetVersion()
				return m.GetTable(), true
			})(yield)
	}
}

// -- the lobby --------------------------------------------------------------------

// ListTables returns a page of the public tables waiting for players, oldest
// first, with the lobby's version to follow it from (WatchLobby, PollLobby).
// Retried while the server is unreachable.
func (p *Player) ListTables(ctx context.Context, req *spadesv1.ListTablesRequest) (*spadesv1.ListTablesResponse, error) {
	return unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.ListTablesResponse, error) {
		return p.c.lobby.ListTables(ctx, req)
	})
}

// TablePages iterates over every page of the lobby's tables of the filter
// (nil: every ruleset), pageSize tables each (0: the server's default).
//
//	for page, err := range player.TablePages(ctx, nil, 0) { ... page.GetTables() ... }
func (p *Player) TablePages(ctx context.Context, filter *spadesv1.LobbyFilter, pageSize int32) iter.Seq2[*spadesv1.ListTablesResponse, error] {
	return func(yield func(*spadesv1.ListTablesResponse, error) bool) {
		token := ""
		for {
			page, err := p.ListTables(ctx, &spadesv1.ListTablesRequest{Filter: filter, PageSize: pageSize, PageToken: token})
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(page, nil) {
				return
			}
			token = page.GetNextPageToken()
			if token == "" {
				return
			}
		}
	}
}

// AllTables reads every page of the lobby's tables of the filter (nil: every
// ruleset). The version is the first page's: follow the lobby from it
// (WatchLobby, PollLobby) and no change is missed.
func (p *Player) AllTables(ctx context.Context, filter *spadesv1.LobbyFilter) ([]*spadesv1.Table, uint64, error) {
	var (
		tables  []*spadesv1.Table
		version uint64
		first   = true
	)
	for page, err := range p.TablePages(ctx, filter, 0) {
		if err != nil {
			return nil, 0, err
		}
		if first {
			version, first = page.GetVersion(), false
		}
		tables = append(tables, page.GetTables()...)
	}
	return tables, version, nil
}

// WatchLobby streams the lobby's changes of the filter (nil: every ruleset)
// after afterVersion (AllTables' or ListTables' version; 0: from now), in
// batches: tables opened or changed (replace what you hold) and tables gone.
// A dropped connection is reopened after the last batch's version, so no
// change is missed (with afterVersion 0, none is once a batch has come). A batch with Reset set means that version is older than
// the changes the server keeps: list the lobby again and watch from its new
// version. The stream never ends by itself: break out of the loop, or end ctx.
func (p *Player) WatchLobby(ctx context.Context, filter *spadesv1.LobbyFilter, afterVersion uint64) iter.Seq2[*spadesv1.WatchLobbyResponse, error] {
	return func(yield func(*spadesv1.WatchLobbyResponse, error) bool) {
		after := afterVersion
		follow(ctx, p.c, p.source,
			func(ctx context.Context) (grpc.ServerStreamingClient[spadesv1.WatchLobbyResponse], error) {
				return p.c.lobby.WatchLobby(ctx, &spadesv1.WatchLobbyRequest{Filter: filter, AfterVersion: after})
			},
			func(m *spadesv1.WatchLobbyResponse) (*spadesv1.WatchLobbyResponse, bool) {
				if m.GetVersion() > after {
					after = m.GetVersion()
				}
				return m, true
			})(yield)
	}
}

// PollLobby is WatchLobby as a long poll: the changes after WithAfterVersion
// (0: from now), waiting up to WithWait for one. The answer's Version is the
// next call's WithAfterVersion. Retried while the server is unreachable.
func (p *Player) PollLobby(ctx context.Context, filter *spadesv1.LobbyFilter, opts ...PollOption) (*spadesv1.WatchLobbyResponse, error) {
	o := pollOptions(opts)
	req := &spadesv1.PollLobbyRequest{Filter: filter, AfterVersion: o.after, WaitMs: o.waitMs()}
	resp, err := unary(ctx, p.c, p.source, o.wait, true, func(ctx context.Context) (*spadesv1.PollLobbyResponse, error) {
		return p.c.lobby.PollLobby(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	if resp.GetChanges() == nil {
		return &spadesv1.WatchLobbyResponse{Version: o.after}, nil
	}
	return resp.GetChanges(), nil
}

// -- quick play -------------------------------------------------------------------

// QuickPlayOption sets a field of QuickPlay.
type QuickPlayOption func(*spadesv1.QuickPlayRequest)

// WithPartner plays as partners with this player (their id): both ask,
// naming each other, for the same rules; the first waits
// (WAITING_FOR_PARTNER) until the second does.
func WithPartner(playerID string) QuickPlayOption {
	return func(r *spadesv1.QuickPlayRequest) { r.PartnerPlayerId = playerID }
}

// WithRated asks for a rated game: the ticket waits in a queue of its own,
// apart from unrated players, and the match's result moves the players'
// ratings in the ruleset's pool (GetTicket shows Ticket.Rated; the placement's
// table, Table.Rated and Table.RatingPool). A table the server seats a bot at
// is not rated (Table.Rated false).
func WithRated() QuickPlayOption {
	return func(r *spadesv1.QuickPlayRequest) { r.Rated = true }
}

// WithRequestID sends this request id (at most 64 characters, else
// INVALID_ARGUMENT BAD_REQUEST_ID) instead of a fresh random one ("": a
// fresh one). QuickPlay repeated with the id that made the player's latest
// ticket answers with that ticket, whatever its state (placed: with its
// placement), instead of opening a second: to resend a QuickPlay that gave
// up (its context ended, or the server stayed unreachable) without risking a
// second game, pick the id beforehand (NewActionID makes one) and pass it to
// both calls. Use a new id for each game.
func WithRequestID(id string) QuickPlayOption {
	return func(r *spadesv1.QuickPlayRequest) { r.RequestId = id }
}

// QuickPlay asks for a game of these rules (nil: classic) and returns the
// ticket; AwaitPlacement waits until it is placed. A player holds one ticket
// at a time: another QuickPlay before it is placed or cancelled is refused
// (ALREADY_EXISTS ALREADY_QUEUED, with Metadata["ticket_id"]).
//
// The request carries a request id (WithRequestID, else a fresh random one
// for each call), so it is retried while the server is unreachable, as
// GetTicket is: a retry whose first answer was lost answers with the ticket
// that first attempt made (even once placed, with its placement) instead of
// opening a second.
func (p *Player) QuickPlay(ctx context.Context, ruleset *spadesv1.Ruleset, opts ...QuickPlayOption) (*spadesv1.Ticket, error) {
	req := &spadesv1.QuickPlayRequest{Ruleset: ruleset}
	for _, o := range opts {
		o(req)
	}
	if req.RequestId == "" {
		req.RequestId = NewActionID()
	}
	resp, err := unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.QuickPlayResponse, error) {
		return p.c.lobby.QuickPlay(ctx, req)
	})
	return resp.GetTicket(), err
}

// GetTicket returns a ticket ("": the player's latest). Once placed it holds
// the placement (match, seat, seat token), every time it is asked. With
// WithAfterVersion and WithWait it is a long poll. Retried while the server
// is unreachable.
func (p *Player) GetTicket(ctx context.Context, ticketID string, opts ...PollOption) (*spadesv1.Ticket, error) {
	o := pollOptions(opts)
	req := &spadesv1.GetTicketRequest{TicketId: ticketID, AfterVersion: o.after, WaitMs: o.waitMs()}
	resp, err := unary(ctx, p.c, p.source, o.wait, true, func(ctx context.Context) (*spadesv1.GetTicketResponse, error) {
		return p.c.lobby.GetTicket(ctx, req)
	})
	return resp.GetTicket(), err
}

// WatchTicket streams a ticket ("": the player's latest) as it changes, until
// it is placed or cancelled (then the iteration ends). A dropped connection is
// reopened with the Client's backoff.
func (p *Player) WatchTicket(ctx context.Context, ticketID string) iter.Seq2[*spadesv1.Ticket, error] {
	return func(yield func(*spadesv1.Ticket, error) bool) {
		var seen uint64
		id := ticketID
		follow(ctx, p.c, p.source,
			func(ctx context.Context) (grpc.ServerStreamingClient[spadesv1.WatchTicketResponse], error) {
				return p.c.lobby.WatchTicket(ctx, &spadesv1.WatchTicketRequest{TicketId: id})
			},
			func(m *spadesv1.WatchTicketResponse) (*spadesv1.Ticket, bool) {
				id = m.GetTicket().GetTicketId() // the same ticket after a reconnection
				if m.GetTicket().GetVersion() <= seen {
					return nil, false
				}
				seen = m.GetTicket().GetVersion()
				return m.GetTicket(), true
			})(yield)
	}
}

// CancelTicket withdraws a ticket not placed yet ("": the player's latest; a
// party's, for both players) and returns it, CANCELLED. Idempotent, so
// retried while the server is unreachable; a placed ticket is refused
// (FAILED_PRECONDITION TICKET_PLACED).
func (p *Player) CancelTicket(ctx context.Context, ticketID string) (*spadesv1.Ticket, error) {
	resp, err := unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.CancelTicketResponse, error) {
		return p.c.lobby.CancelTicket(ctx, &spadesv1.CancelTicketRequest{TicketId: ticketID})
	})
	return resp.GetTicket(), err
}

// AwaitPlacement follows a ticket ("": the player's latest) with GetTicket
// long polls until it is placed, and returns where: the match, the seat and
// the seat token, which plays it as a token from CreateMatch does:
//
//	placement, err := player.AwaitPlacement(ctx, ticket.GetTicketId())
//	seat := client.Seat(placement.GetSeatToken())
//	session, err := seat.Open(ctx, 0)
//
// Asking again (after a lost connection, on another device) gives the same
// placement. A ticket cancelled instead is ErrTicketCancelled, wrapped with
// its cancel_reason. It waits until ctx ends.
func (p *Player) AwaitPlacement(ctx context.Context, ticketID string) (*spadesv1.Placement, error) {
	ticket, err := longPoll(ctx,
		func(after uint64) (*spadesv1.Ticket, error) {
			return p.GetTicket(ctx, ticketID, WithAfterVersion(after), WithWait(LongPollWait))
		},
		(*spadesv1.Ticket).GetVersion,
		func(ticket *spadesv1.Ticket) (bool, error) {
			ticketID = ticket.GetTicketId() // "" (the latest) names it from here on
			switch ticket.GetState() {
			case spadesv1.TicketState_TICKET_STATE_PLACED:
				return true, nil
			case spadesv1.TicketState_TICKET_STATE_CANCELLED:
				return true, fmt.Errorf("%w: %s (%s)", ErrTicketCancelled, ticket.GetTicketId(), ticket.GetCancelReason())
			}
			return false, nil
		})
	if err != nil {
		return nil, err
	}
	return ticket.GetPlacement(), nil
}

// -- ratings ----------------------------------------------------------------------

// LeaderboardOption sets a field of Leaderboard and LeaderboardPages.
type LeaderboardOption func(*spadesv1.GetLeaderboardRequest)

// WithPageSize asks for n players a page (0: the server's default, 25; at
// most 200, else INVALID_ARGUMENT BAD_PAGE_SIZE).
func WithPageSize(n int32) LeaderboardOption {
	return func(r *spadesv1.GetLeaderboardRequest) { r.PageSize = n }
}

// WithPageToken asks for the page of a NextPageToken or PreviousPageToken
// of an earlier page of the same pool (another's, or a token the server did
// not give, is INVALID_ARGUMENT BAD_PAGE_TOKEN).
func WithPageToken(token string) LeaderboardOption {
	return func(r *spadesv1.GetLeaderboardRequest) { r.PageToken = token }
}

// WithAroundPlayer asks for the page that holds this player (not with
// WithPageToken: INVALID_ARGUMENT TOKEN_AND_PLAYER). A player not on the
// leaderboard (fewer rated games than its MinGames, or none) is NOT_FOUND
// PLAYER_NOT_RATED.
func WithAroundPlayer(playerID string) LeaderboardOption {
	return func(r *spadesv1.GetLeaderboardRequest) { r.AroundPlayerId = playerID }
}

// Leaderboard returns a page of a rating pool's leaderboard ("": the
// server's default pool, "classic"; the pools are the ruleset presets), best
// first: from the top, or the page of WithPageToken or WithAroundPlayer, with
// WithPageSize players. Each entry has its rank (from 1); the response has
// the tokens of the pages after and before it ("" at either end), the
// players on the board (TotalPlayers) and the rated games it takes to be on
// it (MinGames). An unknown pool is NOT_FOUND POOL_NOT_FOUND. Retried while
// the server is unreachable.
func (p *Player) Leaderboard(ctx context.Context, pool string, opts ...LeaderboardOption) (*spadesv1.GetLeaderboardResponse, error) {
	req := &spadesv1.GetLeaderboardRequest{Pool: pool}
	for _, o := range opts {
		o(req)
	}
	return p.leaderboard(ctx, req)
}

func (p *Player) leaderboard(ctx context.Context, req *spadesv1.GetLeaderboardRequest) (*spadesv1.GetLeaderboardResponse, error) {
	return unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.GetLeaderboardResponse, error) {
		return p.c.lobby.GetLeaderboard(ctx, req)
	})
}

// LeaderboardPages iterates over a pool's leaderboard page by page, going
// down: from the page Leaderboard would return with these options (the top,
// a page token's page, or a player's page), then each NextPageToken's, to
// the last. A token names the player at its page's edge, so the next page
// starts after the last player seen even when ratings move meanwhile.
//
//	for page, err := range player.LeaderboardPages(ctx, "classic", spades.WithPageSize(50)) {
//		if err != nil { ... }
//		for _, e := range page.GetEntries() { fmt.Println(e.GetRank(), e.GetName()) }
//	}
func (p *Player) LeaderboardPages(ctx context.Context, pool string, opts ...LeaderboardOption) iter.Seq2[*spadesv1.GetLeaderboardResponse, error] {
	return func(yield func(*spadesv1.GetLeaderboardResponse, error) bool) {
		req := &spadesv1.GetLeaderboardRequest{Pool: pool}
		for _, o := range opts {
			o(req)
		}
		for {
			page, err := p.leaderboard(ctx, req)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(page, nil) {
				return
			}
			if page.GetNextPageToken() == "" {
				return
			}
			req = &spadesv1.GetLeaderboardRequest{Pool: req.GetPool(), PageSize: req.GetPageSize(), PageToken: page.GetNextPageToken()}
		}
	}
}

// Profile returns what anyone may see of a player ("": the caller): their
// rating in each pool they played a rated match in (Rank 0 while they have
// fewer rated games than the leaderboard's MinGames), and their record in
// finished lobby matches with humans only (WithHumans) and with bots
// (WithBots). A match's result is recorded a moment after it ends. A player
// who finished no lobby match is NOT_FOUND PLAYER_NOT_FOUND; an id over 128
// characters, INVALID_ARGUMENT BAD_PLAYER_ID. Retried while the server is
// unreachable.
func (p *Player) Profile(ctx context.Context, playerID string) (*spadesv1.PlayerProfile, error) {
	resp, err := unary(ctx, p.c, p.source, 0, true, func(ctx context.Context) (*spadesv1.GetProfileResponse, error) {
		return p.c.lobby.GetProfile(ctx, &spadesv1.GetProfileRequest{PlayerId: playerID})
	})
	return resp.GetProfile(), err
}

// -- rematch ----------------------------------------------------------------------

// Rematch asks, once the seat's match is over, for another with the same
// seats: the first call opens the rematch, each human seat's call accepts it.
// The response has the rematch table (WAITING until every human accepted,
// then STARTED) and this seat's token for the new match (Client.Seat plays it
// once the table has started). With WithAfterVersion (the table's version
// last seen) and WithWait it is a long poll. Refused before the match is
// over (FAILED_PRECONDITION MATCH_NOT_OVER). Asking again changes nothing,
// so it is retried while the server is unreachable.
func (s *Seat) Rematch(ctx context.Context, opts ...PollOption) (*spadesv1.RematchResponse, error) {
	return s.rematch(ctx, false, opts)
}

// DeclineRematch declines the rematch of the seat's finished match: it closes
// for everyone (CLOSED, "declined").
func (s *Seat) DeclineRematch(ctx context.Context) (*spadesv1.RematchResponse, error) {
	return s.rematch(ctx, true, nil)
}

func (s *Seat) rematch(ctx context.Context, decline bool, opts []PollOption) (*spadesv1.RematchResponse, error) {
	o := pollOptions(opts)
	req := &spadesv1.RematchRequest{MatchId: s.matchID, Decline: decline, AfterVersion: o.after, WaitMs: o.waitMs()}
	token := func(context.Context) (string, error) { return s.token, nil }
	return unary(ctx, s.c, token, o.wait, true, func(ctx context.Context) (*spadesv1.RematchResponse, error) {
		return s.c.lobby.Rematch(ctx, req)
	})
}

// AwaitRematch accepts the rematch (opening it if nobody has yet) and waits,
// with Rematch long polls, until every human seat has accepted and the new
// match is dealt; the response's SeatToken plays this seat in it. A rematch
// that closes instead (declined, or not accepted in time) is ErrTableClosed,
// wrapped with the close_reason.
func (s *Seat) AwaitRematch(ctx context.Context) (*spadesv1.RematchResponse, error) {
	return longPoll(ctx,
		func(after uint64) (*spadesv1.RematchResponse, error) {
			return s.Rematch(ctx, WithAfterVersion(after), WithWait(LongPollWait))
		},
		func(resp *spadesv1.RematchResponse) uint64 { return resp.GetTable().GetVersion() },
		func(resp *spadesv1.RematchResponse) (bool, error) {
			table := resp.GetTable()
			switch table.GetState() {
			case spadesv1.TableState_TABLE_STATE_STARTED:
				return true, nil
			case spadesv1.TableState_TABLE_STATE_CLOSED:
				return true, fmt.Errorf("%w: rematch %s (%s)", ErrTableClosed, table.GetTableId(), table.GetCloseReason())
			}
			return false, nil
		})
}

// -- streams ----------------------------------------------------------------------

// follow runs a server-streaming call as an iterator: it yields what take
// keeps of each message, reopens the call after a dropped connection (the
// Client's backoff; open reads what the messages so far taught take), and ends
// when the call ends OK, fails for good (the error is yielded), ctx ends, or
// the loop breaks (the call is cancelled).
func follow[Msg, Out any](ctx context.Context, c *Client, source CredentialSource,
	open func(ctx context.Context) (grpc.ServerStreamingClient[Msg], error),
	take func(*Msg) (Out, bool)) iter.Seq2[Out, error] {
	return func(yield func(Out, error) bool) {
		var zero Out
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		b := c.cfg.backoff
		failures := 0
		for {
			began := time.Now()
			received, stopped := false, false
			err := func() error {
				token, err := source(ctx)
				if err != nil {
					return fmt.Errorf("spades: player credential: %w", err)
				}
				cctx, end := context.WithCancel(withToken(ctx, token))
				defer end()
				st, err := open(cctx)
				if err != nil {
					return err
				}
				for {
					msg, err := st.Recv()
					if err != nil {
						return err
					}
					received = true
					if out, ok := take(msg); ok && !yield(out, nil) {
						stopped = true
						return nil
					}
				}
			}()
			if stopped || err == io.EOF {
				return
			}
			if ctx.Err() != nil || !retryable(err) {
				yield(zero, convert(ctx, err))
				return
			}
			if received || time.Since(began) >= healthyAfter {
				failures = 0
			}
			failures++
			if failures > b.MaxAttempts {
				yield(zero, fmt.Errorf("spades: gave up after %d attempts: %w", failures, convert(ctx, err)))
				return
			}
			if !sleep(ctx, b.delay(failures)) {
				yield(zero, convert(ctx, ctx.Err()))
				return
			}
		}
	}
}
