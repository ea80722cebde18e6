// Command edge is the prototype of a compiled edge in front of the Python core:
// it holds the clients' Play calls (spades.v1.SpadesService/Play, one per seat)
// and multiplexes them over one link to the core (bench/edge/core.py), whose
// messages are proto/spades/edge/v1/link.proto's LinkUp and LinkDown.
//
// The edge never parses a client's message or an event: a client's message goes
// up as the bytes it sent, tagged with the connection's id, and what the core
// sends down is, per audience, the serialized PlayResponse bytes every
// connection of that audience gets — filtered for hidden cards by the core,
// before they reach the edge. The client-facing server uses a codec that moves
// bytes as they are.
//
// The link: --link socket (default), the messages framed by their length on one
// TCP (or unix:PATH) connection; or --link grpc, one bidirectional gRPC call
// (spades.edge.v1.Link/Connect). The core answers each LinkUp with one LinkDown;
// the edge keeps at most --window LinkUps in flight and sends what clients sent
// meanwhile as one LinkUp, so a busy core handles many actions per message and
// an idle one answers each action at once; --linger-us waits that long for more
// before a LinkUp (CPU for latency, at low load).
//
// --procs (GOMAXPROCS) is 1: the work is I/O, and with more Ps each wake-up
// spreads over more threads. Fixed HTTP/2 windows (no --bdp) keep grpc-go from
// sending a BDP PING for every burst it reads.
//
//	edge --listen 127.0.0.1:7000 --core 127.0.0.1:7001 [--link socket|grpc]
//	     [--window 2] [--max-batch 512] [--linger-us 0] [--procs 1]
//	edge --listen 127.0.0.1:7000 --self-answer   # diagnostic: no core (self.go)
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spades-engine/spades/bench/edge/linkpb"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// frames is a message as bytes: one or more serialized fragments whose
// concatenation is the message (protobuf messages merge by concatenation).
type frames [][]byte

// rawCodec moves messages as bytes, both ways, without parsing them.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frames)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	out := make(mem.BufferSlice, len(*f))
	for i, b := range *f {
		out[i] = mem.SliceBuffer(b)
	}
	return out, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frames)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*f = frames{data.Materialize()} // a copy: gRPC frees data when this returns
	return nil
}

func (rawCodec) Name() string { return "proto" }

var _ encoding.CodecV2 = rawCodec{}

// conn is one client's Play call.
type conn struct {
	id     uint64
	stream grpc.ServerStream
	mu     sync.Mutex
	queue  [][]byte       // fragments waiting to be written, in order
	closed *status.Status // set: end the call with it once queue is written
	wake   chan struct{}  // capacity 1: the writer has something to do
}

func (c *conn) push(payloads [][]byte, closing *status.Status) {
	c.mu.Lock()
	c.queue = append(c.queue, payloads...)
	if closing != nil && c.closed == nil {
		c.closed = closing
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes everything queued as one message per wake-up (what queued
// while the previous write ran goes as one message), until the core closes
// the call or the client goes.
func (c *conn) writeLoop(ctx context.Context) error {
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
		queue, closing := c.queue, c.closed
		c.queue = nil
		c.mu.Unlock()
		if len(queue) > 0 {
			msg := frames(queue)
			if err := c.stream.SendMsg(&msg); err != nil {
				return err
			}
			clientWrites.Add(1)
		}
		if closing != nil {
			return grpcstatus.FromProto(closing).Err()
		}
	}
}

// clientWrites counts the messages written to clients.
var clientWrites atomic.Uint64

// edge holds the connections and the link.
type edge struct {
	nextID   atomic.Uint64
	mu       sync.RWMutex
	conns    map[uint64]*conn
	ups      chan *linkpb.Up
	window   int
	maxBatch int
	linger   time.Duration
	self     *selfAnswer // --self-answer: no link, no core

	// Link flow: LinkUps sent and not answered yet.
	flowMu   sync.Mutex
	flowCond *sync.Cond
	inFlight int

	// Counters, printed at exit.
	upMsgs, upItems, downMsgs, downItems atomic.Uint64
}

func newEdge(window, maxBatch int, linger time.Duration) *edge {
	e := &edge{
		conns:    make(map[uint64]*conn),
		ups:      make(chan *linkpb.Up, 1<<16),
		window:   window,
		maxBatch: maxBatch,
		linger:   linger,
	}
	e.flowCond = sync.NewCond(&e.flowMu)
	return e
}

func bearer(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		scheme, cred, ok := strings.Cut(v, " ")
		if ok && strings.EqualFold(scheme, "bearer") {
			return strings.TrimSpace(cred)
		}
	}
	return ""
}

// play serves one client's Play call: a reader goroutine sends its messages up;
// this goroutine writes what the core sends down for it.
func (e *edge) play(_ any, stream grpc.ServerStream) error {
	ctx := stream.Context()
	c := &conn{id: e.nextID.Add(1), stream: stream, wake: make(chan struct{}, 1)}
	e.mu.Lock()
	e.conns[c.id] = c
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.conns, c.id)
		e.mu.Unlock()
		e.ups <- &linkpb.Up{Conn: c.id, Closed: true}
	}()
	credential := bearer(ctx)
	if e.self != nil {
		go func() {
			var table *selfTable
			for {
				var msg frames
				if err := stream.RecvMsg(&msg); err != nil {
					return
				}
				if table == nil {
					table = e.self.open(c, credential)
				} else {
					e.self.act(c, table)
				}
			}
		}()
		return c.writeLoop(ctx)
	}
	go func() {
		first := true
		for {
			var msg frames
			if err := stream.RecvMsg(&msg); err != nil {
				return // EOF (the client is done sending) or the call ended
			}
			up := &linkpb.Up{Conn: c.id, Request: msg[0]}
			if first {
				up.Credential, first = credential, false
			}
			e.ups <- up
		}
	}()
	return c.writeLoop(ctx)
}

func startLink(e *edge, link link) {
	go func() {
		if err := e.sendLoop(link); err != nil {
			log.Fatalf("link send: %v", err)
		}
	}()
	go func() {
		err := e.recvLoop(link)
		if err == io.EOF {
			log.Fatalf("link: the core ended it")
		}
		log.Fatalf("link receive: %v", err)
	}()
}

// link is the call to the core: a gRPC bidirectional call, or a socket.
type link interface {
	Send(*linkpb.LinkUp) error
	Recv() (*linkpb.LinkDown, error)
}

// socketLink carries the same messages over a plain TCP connection, each
// framed by its length (4 bytes, little-endian): no HTTP/2, no gRPC.
type socketLink struct {
	conn net.Conn
	r    *bufio.Reader
	out  []byte
	in   []byte
}

func dialSocket(addr string) (*socketLink, error) {
	var conn net.Conn
	var err error
	network := "tcp"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", path
	}
	for range 100 { // the core may still be starting
		if conn, err = net.Dial(network, addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	return &socketLink{conn: conn, r: bufio.NewReaderSize(conn, 1<<16)}, nil
}

func (s *socketLink) Send(m *linkpb.LinkUp) error {
	b, err := proto.MarshalOptions{}.MarshalAppend(append(s.out[:0], 0, 0, 0, 0), m)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	s.out = b
	_, err = s.conn.Write(b)
	return err
}

func (s *socketLink) Recv() (*linkpb.LinkDown, error) {
	var head [4]byte
	if _, err := io.ReadFull(s.r, head[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(head[:]))
	if cap(s.in) < n {
		s.in = make([]byte, n)
	}
	body := s.in[:n]
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, err
	}
	down := &linkpb.LinkDown{}
	return down, proto.Unmarshal(body, down) // bytes fields are copied out of body
}

// sendLoop sends what clients sent as LinkUps: it waits for room in the window,
// then takes everything queued (at most maxBatch items; with a linger, what
// else comes within it) as one message.
func (e *edge) sendLoop(link link) error {
	items := make([]*linkpb.Up, 0, e.maxBatch)
	var timer *time.Timer
	for {
		e.flowMu.Lock()
		for e.inFlight >= e.window {
			e.flowCond.Wait()
		}
		e.flowMu.Unlock()
		items = append(items[:0], <-e.ups)
	drain:
		for len(items) < e.maxBatch {
			select {
			case up := <-e.ups:
				items = append(items, up)
			default:
				break drain
			}
		}
		if e.linger > 0 && len(items) < e.maxBatch {
			if timer == nil {
				timer = time.NewTimer(e.linger)
			} else {
				timer.Reset(e.linger)
			}
		linger:
			for len(items) < e.maxBatch {
				select {
				case up := <-e.ups:
					items = append(items, up)
				case <-timer.C:
					break linger
				}
			}
			timer.Stop()
		}
		e.flowMu.Lock()
		e.inFlight++
		e.flowMu.Unlock()
		if err := link.Send(&linkpb.LinkUp{Items: items}); err != nil {
			return err
		}
		e.upMsgs.Add(1)
		e.upItems.Add(uint64(len(items)))
	}
}

// recvLoop hands what the core sends to the connections: each connection's
// fragments of one LinkDown are queued together, so they go out as one write.
func (e *edge) recvLoop(link link) error {
	type pending struct {
		payloads [][]byte
		closing  *status.Status
	}
	byConn := make(map[uint64]*pending)
	order := make([]uint64, 0, 64)
	for {
		down, err := link.Recv()
		if err != nil {
			return err
		}
		e.downMsgs.Add(1)
		e.downItems.Add(uint64(len(down.Items)))
		if down.Answers > 0 {
			e.flowMu.Lock()
			e.inFlight -= int(down.Answers)
			e.flowCond.Signal()
			e.flowMu.Unlock()
		}
		for _, item := range down.Items {
			var closing *status.Status
			if item.CloseCode != 0 {
				closing = &status.Status{Code: item.CloseCode, Message: item.CloseMessage}
				if len(item.CloseDetails) > 0 {
					full := &status.Status{}
					if proto.Unmarshal(item.CloseDetails, full) == nil {
						closing = full
					}
				}
			}
			for _, id := range item.Conns {
				p := byConn[id]
				if p == nil {
					p = &pending{}
					byConn[id] = p
					order = append(order, id)
				}
				if len(item.Payload) > 0 {
					p.payloads = append(p.payloads, item.Payload)
				}
				if closing != nil {
					p.closing = closing
				}
			}
		}
		e.mu.RLock()
		for _, id := range order {
			if c := e.conns[id]; c != nil {
				p := byConn[id]
				c.push(p.payloads, p.closing)
			}
		}
		e.mu.RUnlock()
		clear(byConn)
		order = order[:0]
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:7000", "address for clients")
	coreAddr := flag.String("core", "127.0.0.1:7001", "the core's link address")
	window := flag.Int("window", 2, "LinkUps in flight before the edge batches")
	maxBatch := flag.Int("max-batch", 512, "most client messages in one LinkUp")
	linkKind := flag.String("link", "socket", "how the link to the core is carried: grpc | socket")
	self := flag.Bool("self-answer", false, "diagnostic: answer every action with fixed bytes, no core")
	lingerUs := flag.Int("linger-us", 0, "wait this long for more client messages before a LinkUp")
	lean := flag.Bool("lean", true, "pooled write buffers and small read buffers per connection")
	readBuffer := flag.Int("read-buffer", 4096, "per-connection read buffer with --lean")
	procs := flag.Int("procs", 1, "GOMAXPROCS: the edge's work is I/O; more Ps mean more wake-ups")
	bdp := flag.Bool("bdp", false, "grpc-go's BDP estimation on client connections")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here until SIGTERM")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("edge: ")
	runtime.GOMAXPROCS(*procs)
	if *self {
		*linkKind = "none"
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatalf("cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("cpuprofile: %v", err)
		}
	}
	e := newEdge(*window, *maxBatch, time.Duration(*lingerUs)*time.Microsecond)
	var link link
	switch *linkKind {
	case "none": // --self-answer
		if !*self {
			log.Fatalf("--link none is for --self-answer")
		}
	case "grpc":
		opts := []grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)),
		}
		if !*bdp {
			opts = append(opts, grpc.WithInitialWindowSize(1<<24), grpc.WithInitialConnWindowSize(1<<24))
		}
		cc, err := grpc.NewClient(*coreAddr, opts...)
		if err != nil {
			log.Fatalf("core client: %v", err)
		}
		stream, err := linkpb.NewLinkClient(cc).Connect(context.Background(), grpc.WaitForReady(true))
		if err != nil {
			log.Fatalf("link: %v", err)
		}
		link = stream
	case "socket":
		s, err := dialSocket(*coreAddr)
		if err != nil {
			log.Fatalf("link: %v", err)
		}
		link = s
	default:
		log.Fatalf("--link: grpc or socket, not %q", *linkKind)
	}
	if *self {
		e.self = newSelfAnswer()
	} else {
		startLink(e, link)
	}

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	opts := []grpc.ServerOption{grpc.ForceServerCodecV2(rawCodec{})}
	if *lean {
		// A connection's write buffer is taken from a pool while it writes,
		// and its read buffer is small: messages here are a few hundred bytes.
		opts = append(opts, grpc.SharedWriteBuffer(true), grpc.ReadBufferSize(*readBuffer))
	}
	if !*bdp {
		// Fixed windows turn off the server's BDP estimation (a PING per read).
		opts = append(opts, grpc.InitialWindowSize(1<<20), grpc.InitialConnWindowSize(1<<20))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "spades.v1.SpadesService",
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{
			StreamName:    "Play",
			Handler:       e.play,
			ServerStreams: true,
			ClientStreams: true,
		}},
	}, struct{}{})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		up, items := e.upMsgs.Load(), e.upItems.Load()
		log.Printf("link: %d LinkUps (%.1f items each), %d LinkDowns (%d items), %d client writes",
			up, float64(items)/float64(max(up, 1)), e.downMsgs.Load(), e.downItems.Load(), clientWrites.Load())
		pprof.StopCPUProfile()
		srv.Stop()
		os.Exit(0)
	}()
	fmt.Printf("listening %s\n", lis.Addr())
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("serve: %v", err)
	}
}
