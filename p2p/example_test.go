package p2p_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling/server"
)

// Two players pair through a signaling server (here one started on
// loopback by the example, as a game can embed one) and exchange a message.
// The host creates a private room and gives its code to the guest. On a
// loopback server URL, WebRTC gathers loopback candidates only.
func Example() {
	srv, err := server.Start("127.0.0.1:0", server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	room, err := p2p.CreateRoom(ctx, srv.URL(), p2p.Config{}) // the host
	if err != nil {
		log.Fatal(err)
	}
	hosted := make(chan *p2p.Session, 1)
	go func() {
		s, err := room.Connect(ctx) // waits for the guest
		if err != nil {
			log.Fatal(err)
		}
		hosted <- s
	}()
	guest, err := p2p.Connect(ctx, srv.URL(), room.Code(), p2p.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer guest.Close()
	host := <-hosted
	defer host.Close()
	fmt.Println("host:", host.Role(), "- guest:", guest.Role())

	// Like a game, send every tick and drain what arrived: messages are
	// unreliable, so what matters is repeated until the peer shows it got it.
	tick := time.NewTicker(time.Second / 60)
	defer tick.Stop()
	var got string
	for got == "" {
		<-tick.C
		if err := host.Send([]byte("hello")); err != nil {
			log.Fatal(err)
		}
		guest.Poll(func(p []byte) { got = string(p) })
	}
	fmt.Println("guest got:", got)
	// Output:
	// host: offerer - guest: answerer
	// guest got: hello
}
