// Command refserver is the reference the transport benchmark compares the
// daemon with: the kubelet's Go gRPC stack (Debian golang-google-grpc-dev,
// grpc-go 1.33) at its best, serving /v1alpha1.Pods/ListPods, GetPod and
// WatchPods on a UNIX socket by replaying bytes dumped from the daemon
// (bench/go/loadclient dump). No generated code: messages are bytes through a
// pass-through codec, so nothing is encoded per request.
//
// With -live-rate R it also broadcasts R MODIFIED events per second (the
// dumped pods in turn, pre-encoded) to every watcher after its initial list,
// through a bounded queue per watcher (-queue; a full queue ends that watch
// with RESOURCE_EXHAUSTED, as the daemon does); on SIGTERM it writes each
// change's "uid sent_unix_ns" to -timeline and a JSON stats line to stdout.
//
// Build (GOPATH mode):
//
//	GO111MODULE=off GOPATH=$TMP:/usr/share/gocode go build -o refserver ./bench/go/refserver
//
// Usage:
//
//	refserver -socket PATH -list FILE -get FILE -watch FILE [-live-rate R] [-queue N] [-timeline FILE]
package main

import (
	rawproto "../../../tests/_support/go/rawproto"
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// replay holds the dumped messages.
type replay struct {
	list    []byte
	get     []byte
	initial [][]byte // ADDED events then INITIAL_SYNC_COMPLETE
	live    [][]byte // one MODIFIED event per pod
	uids    []string // pod UID of live[i]
}

// hub broadcasts live events to watchers through bounded queues.
type hub struct {
	mu       sync.Mutex
	watchers map[chan []byte]struct{}
	dropped  int64
}

func (h *hub) subscribe(size int) chan []byte {
	ch := make(chan []byte, size)
	h.mu.Lock()
	h.watchers[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan []byte) {
	h.mu.Lock()
	if _, ok := h.watchers[ch]; ok {
		delete(h.watchers, ch)
		close(ch)
	}
	h.mu.Unlock()
}

func (h *hub) publish(ev []byte) {
	h.mu.Lock()
	for ch := range h.watchers {
		select {
		case ch <- ev:
		default:
			// Slow watcher: end it, as the daemon does (DESIGN.md §6.5).
			delete(h.watchers, ch)
			close(ch)
			atomic.AddInt64(&h.dropped, 1)
		}
	}
	h.mu.Unlock()
}

func load(listPath, getPath, watchPath string) (*replay, error) {
	r := &replay{}
	var err error
	if r.list, err = ioutil.ReadFile(listPath); err != nil {
		return nil, err
	}
	if r.get, err = ioutil.ReadFile(getPath); err != nil {
		return nil, err
	}
	raw, err := ioutil.ReadFile(watchPath)
	if err != nil {
		return nil, err
	}
	for i := 0; i+4 <= len(raw); {
		n := int(binary.BigEndian.Uint32(raw[i:]))
		if i+4+n > len(raw) {
			return nil, fmt.Errorf("%s: truncated event at %d", watchPath, i)
		}
		ev := raw[i+4 : i+4+n]
		r.initial = append(r.initial, ev)
		if len(ev) > 2 && ev[0] == 0x08 && ev[1] == 0x01 {
			mod := append([]byte{}, ev...)
			mod[1] = 0x02
			r.live = append(r.live, mod)
			r.uids = append(r.uids, string(rawproto.Field(rawproto.Field(rawproto.Field(ev, 2), 1), 5)))
		}
		i += 4 + n
	}
	return r, nil
}

func main() {
	socket := flag.String("socket", "", "UNIX socket to serve on")
	listPath := flag.String("list", "", "ListPods response bytes")
	getPath := flag.String("get", "", "GetPod response bytes")
	watchPath := flag.String("watch", "", "WatchPods events, each prefixed by a 4-byte big-endian length")
	timeline := flag.String("timeline", "", "where to write each live change's \"uid sent_unix_ns\" on exit")
	liveRate := flag.Int("live-rate", 0, "MODIFIED events broadcast per second after the initial list")
	queue := flag.Int("queue", 100, "events a watcher may have pending before it is ended")
	flag.Parse()
	if *socket == "" || *listPath == "" || *getPath == "" || *watchPath == "" {
		fmt.Fprintln(os.Stderr, "usage: refserver -socket PATH -list FILE -get FILE -watch FILE [-live-rate R] [-queue N] [-timeline FILE]")
		os.Exit(2)
	}
	r, err := load(*listPath, *getPath, *watchPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "refserver:", err)
		os.Exit(1)
	}
	h := &hub{watchers: map[chan []byte]struct{}{}}

	unaryHandler := func(body []byte) func(interface{}, context.Context, func(interface{}) error, grpc.UnaryServerInterceptor) (interface{}, error) {
		return func(_ interface{}, _ context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
			var req []byte
			if err := dec(&req); err != nil {
				return nil, err
			}
			return body, nil
		}
	}
	watchHandler := func(_ interface{}, stream grpc.ServerStream) error {
		var req []byte
		if err := stream.RecvMsg(&req); err != nil {
			return err
		}
		var ch chan []byte
		if *liveRate > 0 {
			ch = h.subscribe(*queue)
			defer h.unsubscribe(ch)
		}
		for _, ev := range r.initial {
			if err := stream.SendMsg(ev); err != nil {
				return err
			}
		}
		if ch == nil {
			<-stream.Context().Done()
			return stream.Context().Err()
		}
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					return status.Error(codes.ResourceExhausted, "watcher too slow")
				}
				if err := stream.SendMsg(ev); err != nil {
					return err
				}
			case <-stream.Context().Done():
				return stream.Context().Err()
			}
		}
	}
	desc := &grpc.ServiceDesc{
		ServiceName: "v1alpha1.Pods",
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "ListPods", Handler: unaryHandler(r.list)},
			{MethodName: "GetPod", Handler: unaryHandler(r.get)},
		},
		Streams: []grpc.StreamDesc{
			{StreamName: "WatchPods", Handler: watchHandler, ServerStreams: true},
		},
	}
	server := grpc.NewServer(grpc.CustomCodec(rawproto.Codec{}),
		grpc.MaxSendMsgSize(1<<30), grpc.MaxRecvMsgSize(1<<30))
	server.RegisterService(desc, struct{}{})
	os.Remove(*socket)
	lis, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "refserver:", err)
		os.Exit(1)
	}

	type change struct {
		uid string
		at  int64
	}
	var changes []change
	var changesMu sync.Mutex
	stopLive := make(chan struct{})
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		if *liveRate <= 0 || len(r.live) == 0 {
			return
		}
		start := time.Now()
		period := time.Second / time.Duration(*liveRate)
		for k := 0; ; k++ {
			due := start.Add(time.Duration(k+1) * period)
			select {
			case <-stopLive:
				return
			case <-time.After(time.Until(due)):
			}
			i := k % len(r.live)
			now := time.Now().UnixNano()
			h.publish(r.live[i])
			changesMu.Lock()
			changes = append(changes, change{r.uids[i], now})
			changesMu.Unlock()
		}
	}()

	go server.Serve(lis)
	fmt.Printf("{\"ready\":true,\"pods\":%d,\"events\":%d}\n", len(r.live), len(r.initial))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	close(stopLive)
	<-liveDone
	server.Stop()
	if *timeline != "" {
		f, err := os.Create(*timeline)
		if err == nil {
			w := bufio.NewWriter(f)
			changesMu.Lock()
			for _, c := range changes {
				fmt.Fprintf(w, "%s %d\n", c.uid, c.at)
			}
			changesMu.Unlock()
			w.Flush()
			f.Close()
		}
	}
	stats, _ := json.Marshal(map[string]int64{
		"changes":          int64(len(changes)),
		"dropped_watchers": atomic.LoadInt64(&h.dropped),
	})
	fmt.Println(string(stats))
}
