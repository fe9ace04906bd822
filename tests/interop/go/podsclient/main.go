// Command podsclient is a grpc-go (Debian golang-google-grpc-dev, 1.33)
// client of the Pods API for the interop tests: no generated code, messages
// travel as bytes through a forced codec. It runs N connection cycles, each
// on a fresh connection: ListPods and GetPod on /v1alpha1.Pods and /Pods, a
// GetPod of an unknown pod, a WatchPods read for a few events then cancelled,
// a WatchPods with a short deadline, and a close in the chosen order. It
// prints one JSON summary on stdout.
//
// Build (GOPATH mode):
//
//	GO111MODULE=off GOPATH=$TMP:/usr/share/gocode go build -o podsclient ./tests/interop/go/podsclient
//
// Usage:
//
//	podsclient -socket PATH [-cycles N] [-parallel P] [-close mix|cancel|open|graceful]
//	           [-watch-events K] [-deadline DURATION] [-progress]
package main

import (
	rawproto "../../../_support/go/rawproto"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var streamDesc = &grpc.StreamDesc{StreamName: "WatchPods", ServerStreams: true}

// closeOrders are the ways a cycle ends its connection.
var closeOrders = []string{"cancel", "open", "graceful"}

type summary struct {
	Cycles      int            `json:"cycles"`
	CallsOK     int            `json:"calls_ok"`
	WatchEvents int            `json:"watch_events"`
	Statuses    map[string]int `json:"statuses"`
	Closes      map[string]int `json:"closes"`
	Unexpected  []string       `json:"unexpected"`
	Seconds     float64        `json:"seconds"`
}

type recorder struct {
	mu sync.Mutex
	s  summary
}

func (r *recorder) status(code codes.Code) {
	r.mu.Lock()
	r.s.Statuses[code.String()]++
	if code == codes.OK {
		r.s.CallsOK++
	}
	r.mu.Unlock()
}

func (r *recorder) unexpected(format string, args ...interface{}) {
	r.mu.Lock()
	if len(r.s.Unexpected) < 20 {
		r.s.Unexpected = append(r.s.Unexpected, fmt.Sprintf(format, args...))
	}
	r.mu.Unlock()
}

func (r *recorder) add(f func(s *summary)) {
	r.mu.Lock()
	f(&r.s)
	r.mu.Unlock()
}

// firstUID reads pods[0].metadata.uid of a ListPods response (either service).
func firstUID(list []byte) string {
	return string(rawproto.Field(rawproto.Field(rawproto.Field(list, 1), 1), 5))
}

func dial(socket string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return grpc.DialContext(ctx, "passthrough:///pods-api",
		grpc.WithInsecure(),
		grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawproto.Codec{}),
			grpc.MaxCallRecvMsgSize(1<<30)),
	)
}

// unary calls a method and records its status; any status but `want` (or
// `alsoOK`) is unexpected.
func unary(conn *grpc.ClientConn, r *recorder, method string, req []byte, want codes.Code, alsoOK ...codes.Code) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp []byte
	err := conn.Invoke(ctx, method, req, &resp)
	code := status.Code(err)
	r.status(code)
	if code == want {
		return resp
	}
	for _, c := range alsoOK {
		if code == c {
			return resp
		}
	}
	r.unexpected("%s: %v (want %s)", method, err, want)
	return resp
}

// watch opens a WatchPods stream and reads `events` messages from it.
func watch(ctx context.Context, conn *grpc.ClientConn, r *recorder, method string, events int) (grpc.ClientStream, error) {
	s, err := conn.NewStream(ctx, streamDesc, method)
	if err != nil {
		return nil, err
	}
	if err := s.SendMsg([]byte{}); err != nil {
		return s, err
	}
	if err := s.CloseSend(); err != nil {
		return s, err
	}
	for i := 0; i < events; i++ {
		var m []byte
		if err := s.RecvMsg(&m); err != nil {
			return s, err
		}
		r.add(func(s *summary) { s.WatchEvents++ })
	}
	return s, nil
}

// drain reads a stream until it ends and returns its final error.
func drain(s grpc.ClientStream) error {
	for {
		var m []byte
		if err := s.RecvMsg(&m); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

func cycle(socket string, r *recorder, order string, watchEvents int, deadline time.Duration) error {
	conn, err := dial(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, prefix := range []string{"/v1alpha1.Pods", "/Pods"} {
		list := unary(conn, r, prefix+"/ListPods", []byte{}, codes.OK)
		if uid := firstUID(list); uid != "" {
			// The simulated node churns: the pod may be gone by now.
			unary(conn, r, prefix+"/GetPod", rawproto.GetRequest(uid), codes.OK, codes.NotFound)
		} else {
			r.unexpected("%s/ListPods: no pod in a %d-byte response", prefix, len(list))
		}
	}
	unary(conn, r, "/v1alpha1.Pods/GetPod", rawproto.GetRequest("00000000-0000-4000-8000-00000000dead"), codes.NotFound)

	// A watch read for a few events, then cancelled by the client.
	ctx, cancel := context.WithCancel(context.Background())
	s, err := watch(ctx, conn, r, "/v1alpha1.Pods/WatchPods", watchEvents)
	if err != nil {
		r.unexpected("WatchPods: %v", err)
	}
	cancel()
	if s != nil {
		code := status.Code(drain(s))
		r.status(code)
		if code != codes.Canceled {
			r.unexpected("cancelled WatchPods ended with %s", code)
		}
	}

	// A watch with a short deadline: it never ends on its own, so the deadline ends it.
	dctx, dcancel := context.WithTimeout(context.Background(), deadline)
	s, err = watch(dctx, conn, r, "/Pods/WatchPods", 0)
	if err == nil {
		err = drain(s)
	}
	dcancel()
	code := status.Code(err)
	r.status(code)
	if code != codes.DeadlineExceeded {
		r.unexpected("WatchPods with a %s deadline ended with %v", deadline, err)
	}

	switch order {
	case "cancel":
		// Cancel an open watch, then close the connection.
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := watch(ctx, conn, r, "/v1alpha1.Pods/WatchPods", 1); err != nil {
			r.unexpected("WatchPods before close: %v", err)
		}
		cancel()
		return conn.Close()
	case "open":
		// Close the connection under an open watch (grpc-go 1.33 sends no GOAWAY).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := watch(ctx, conn, r, "/v1alpha1.Pods/WatchPods", 1); err != nil {
			r.unexpected("WatchPods before close: %v", err)
		}
		return conn.Close()
	default:
		return conn.Close()
	}
}

func main() {
	socket := flag.String("socket", "", "UNIX socket of the Pods API")
	cycles := flag.Int("cycles", 100, "connection cycles")
	parallel := flag.Int("parallel", 1, "cycles run at once")
	closeOrder := flag.String("close", "mix", "close order: mix, cancel, open or graceful")
	watchEvents := flag.Int("watch-events", 3, "events read before a watch is cancelled")
	deadline := flag.Duration("deadline", 30*time.Millisecond, "deadline of the short-deadline watch")
	progress := flag.Bool("progress", false, "print \"progress N\" after each cycle (for a kill -9 mid-run)")
	flag.Parse()
	if *socket == "" {
		fmt.Fprintln(os.Stderr, "podsclient: -socket is required")
		os.Exit(2)
	}
	r := &recorder{s: summary{Statuses: map[string]int{}, Closes: map[string]int{}, Unexpected: []string{}}}
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	var fatal error
	var fatalOnce sync.Once
	var stopped int32
	for w := 0; w < *parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				order := *closeOrder
				if order == "mix" {
					order = closeOrders[i%len(closeOrders)]
				}
				err := cycle(*socket, r, order, *watchEvents, *deadline)
				if err != nil && !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
					// Dial failures mean the daemon stopped answering: stop.
					if _, ok := status.FromError(err); !ok || status.Code(err) == codes.Unavailable {
						fatalOnce.Do(func() { fatal = err; atomic.StoreInt32(&stopped, 1) })
					}
				}
				done := 0
				r.add(func(s *summary) { s.Cycles++; s.Closes[order]++; done = s.Cycles })
				if *progress {
					fmt.Printf("progress %d\n", done)
				}
			}
		}()
	}
	for i := 0; i < *cycles; i++ {
		if atomic.LoadInt32(&stopped) != 0 {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	r.s.Seconds = time.Since(start).Seconds()
	if fatal != nil {
		r.s.Unexpected = append(r.s.Unexpected, "stopped: "+fatal.Error())
	}
	out, _ := json.Marshal(r.s)
	fmt.Println(string(out))
	if fatal != nil {
		os.Exit(1)
	}
}
