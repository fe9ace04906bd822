// Command peerserver is the real gRPC server our GrpcChannel is tested against
// (tests/grpc/client_interop_test.ts): grpc-go 1.33 from Debian's
// golang-google-grpc-dev, messages as bytes through a pass-through codec and
// one generic handler, so no generated code is needed.
//
// Methods (request and response are raw bytes):
//
//	/t.T/Echo         the request back
//	/t.T/Count        the request is a decimal n: messages "#0" ... "#n-1"
//	/t.T/Fail         status NOT_FOUND with the request as its message
//	/t.T/Hold         "#0", then on SIGTERM "bye" and OK
//	/t.T/HoldForever  "#0", then nothing until the client or the server goes
//
// On SIGTERM it prints "stopping", stops gracefully (GOAWAY, PING, GOAWAY; the
// calls in flight may finish), forces the stop after -grace, prints
// "stopped" and exits 0.
//
// Build (GOPATH mode):
//
//	GO111MODULE=off GOPATH=$TMP:/usr/share/gocode go build -o peerserver ./tests/grpc/go/peerserver
package main

import (
	rawproto "../../../_support/go/rawproto"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func main() {
	socket := flag.String("socket", "", "unix socket to listen on")
	grace := flag.Duration("grace", 500*time.Millisecond, "longest graceful stop before a forced one")
	flag.Parse()
	os.Remove(*socket)
	lis, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stopping := make(chan struct{})
	handler := func(_ interface{}, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		var req []byte
		if err := stream.RecvMsg(&req); err != nil {
			return err
		}
		switch method {
		case "/t.T/Echo":
			return stream.SendMsg(req)
		case "/t.T/Count":
			n, err := strconv.Atoi(string(req))
			if err != nil {
				return status.Error(codes.InvalidArgument, err.Error())
			}
			for i := 0; i < n; i++ {
				if err := stream.SendMsg([]byte(fmt.Sprintf("#%d", i))); err != nil {
					return err
				}
			}
			return nil
		case "/t.T/Fail":
			return status.Error(codes.NotFound, string(req))
		case "/t.T/Hold", "/t.T/HoldForever":
			if err := stream.SendMsg([]byte("#0")); err != nil {
				return err
			}
			if method == "/t.T/Hold" {
				select {
				case <-stopping:
					return stream.SendMsg([]byte("bye"))
				case <-stream.Context().Done():
					return stream.Context().Err()
				}
			}
			<-stream.Context().Done()
			return stream.Context().Err()
		}
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	srv := grpc.NewServer(grpc.CustomCodec(rawproto.Codec{}), grpc.UnknownServiceHandler(handler))
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan struct{})
	go func() {
		<-signals
		fmt.Println("stopping")
		close(stopping)
		done := make(chan struct{})
		go func() {
			srv.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(*grace):
			srv.Stop()
		}
		close(served)
	}()
	fmt.Println("ready")
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	<-served
	fmt.Println("stopped")
}
