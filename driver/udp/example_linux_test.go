//go:build linux

package udp_test

import (
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// A sender and a receiver on loopback sharing one pool: 64 datagrams built
// in pool buffers go out with one doorbell (one sendmmsg), and the receiver
// sleeps in Wait until they are queued, then takes them with Poll. This is
// the README's example.
func Example() {
	p, err := pool.New(pool.Config{}) // default classes, 128 B headroom
	if err != nil {
		log.Fatal(err)
	}
	defer func() { // runs last: the devices give their buffers back first
		if err := p.Close(); err != nil { // ErrLeak names buffers never freed
			log.Print(err)
		}
	}()

	rx, err := udp.Open(udp.Config{
		Config: netdev.Config{Pool: p},
		Local:  netip.MustParseAddrPort("127.0.0.1:0"), // the kernel picks the port
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rx.Close()
	tx, err := udp.Open(udp.Config{Config: netdev.Config{Pool: p}, Remote: rx.LocalAddr()})
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Close()

	payload := []byte("hello, skb")
	c := tx.Cache() // one goroutine per device
	for i := range 64 {
		b, err := c.Alloc(len(payload)) // headroom reserved, data not zeroed
		if err != nil {
			log.Fatal(err)
		}
		copy(b.Put(len(payload)), payload)
		if err := tx.Xmit(b, i < 63); err != nil { // takes b, also on error
			log.Fatal(err)
		}
	}

	got := 0
	for got < 64 {
		if err := rx.Wait(time.Second); err != nil { // sleeps until one is queued
			log.Fatal(err)
		}
		n, err := rx.Poll(64, func(b *skb.Buff) { // the handler owns b
			if string(b.Data()) != string(payload) {
				log.Fatalf("got %q", b.Data())
			}
			rx.Cache().Free(b)
		})
		if err != nil {
			log.Fatal(err)
		}
		got += n
	}
	fmt.Println("received", got, "datagrams in", tx.Stats().TxDoorbells, "doorbell")
	// Output: received 64 datagrams in 1 doorbell
}

// An echo server answers each datagram from where it came: Src gives the
// source during the handler, and XmitTo sends the same buffer back, which
// it then owns and frees after sending.
func Example_echo() {
	srv, err := udp.Open(udp.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	cli, err := udp.Open(udp.Config{Remote: srv.LocalAddr()})
	if err != nil {
		panic(err)
	}
	defer cli.Close()

	b, _ := cli.Cache().Alloc(5)
	copy(b.Put(5), "hello")
	if err := cli.Xmit(b, false); err != nil {
		panic(err)
	}

	echo := func(b *skb.Buff) {
		if err := srv.XmitTo(b, srv.Src(), false); err != nil {
			panic(err)
		}
	}
	if err := srv.Wait(time.Second); err != nil {
		panic(err)
	}
	srv.Poll(64, echo)

	if err := cli.Wait(time.Second); err != nil {
		panic(err)
	}
	cli.Poll(64, func(b *skb.Buff) {
		fmt.Printf("%s from the server: %v\n", b.Data(), cli.Src() == srv.LocalAddr())
		cli.Cache().Free(b)
	})
	// Output: hello from the server: true
}

// A packet generator's flows are many destination ports on one address: an
// unconnected device sends each datagram where XmitTo says, and with GSO the
// doorbell still sends each run to one port as one message.
func ExampleDevice_XmitTo() {
	var sinks [4]*udp.Device
	for i := range sinks {
		d, err := udp.Open(udp.Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
		if err != nil {
			panic(err)
		}
		defer d.Close()
		sinks[i] = d
	}
	gen, err := udp.Open(udp.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"), GSO: true})
	if err != nil {
		panic(err)
	}
	defer gen.Close()

	const perFlow = 16
	for i := range len(sinks) * perFlow {
		b, _ := gen.Cache().Alloc(64)
		b.Put(64)
		flow := sinks[i/perFlow].LocalAddr() // runs of 16 to each port
		if err := gen.XmitTo(b, flow, i < len(sinks)*perFlow-1); err != nil {
			panic(err)
		}
	}
	fmt.Println("doorbells:", gen.Stats().TxDoorbells, "datagrams:", gen.Stats().TxPackets)

	for i, d := range sinks {
		got := 0
		for got < perFlow && d.Wait(time.Second) == nil {
			n, _ := d.Poll(64, func(b *skb.Buff) { d.Cache().Free(b) })
			got += n
		}
		fmt.Printf("flow %d: %d datagrams\n", i, got)
	}
	// Output:
	// doorbells: 1 datagrams: 64
	// flow 0: 16 datagrams
	// flow 1: 16 datagrams
	// flow 2: 16 datagrams
	// flow 3: 16 datagrams
}

// A relay (a tunnel's encapsulating end): datagrams received on one
// device get an 8-byte header pushed into their headroom and go out of
// another device in a batch, the same buffers without a copy; the far end
// strips the header. The relay's handler owns each buffer until Xmit takes
// it; CowHead makes a shared one (a GRO segment, a clone) private first,
// and costs nothing on one that is not. One goroutine runs both devices.
func Example_relay() {
	p, err := pool.New(pool.Config{})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	open := func(c udp.Config) *udp.Device {
		c.Pool = p
		d, err := udp.Open(c)
		if err != nil {
			panic(err)
		}
		return d
	}
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	far := open(udp.Config{Local: lo})
	defer far.Close()
	in := open(udp.Config{Local: lo})
	defer in.Close()
	out := open(udp.Config{Remote: far.LocalAddr()})
	defer out.Close()
	cli := open(udp.Config{Remote: in.LocalAddr()})
	defer cli.Close()

	for i := range 64 {
		b, _ := cli.Cache().Alloc(100)
		copy(b.Put(100), fmt.Sprintf("datagram %02d", i))
		if err := cli.Xmit(b, i < 63); err != nil {
			panic(err)
		}
	}

	relay := func(b *skb.Buff) {
		if err := b.CowHead(in.Cache(), 8); err != nil {
			in.Cache().Free(b) // the handler owns b: drop it
			return
		}
		copy(b.Push(8), "SKBTUNL0")
		if err := out.Xmit(b, true); err != nil { // Xmit owns b now, also on error
			fmt.Println("relay:", err)
		}
	}
	for relayed := 0; relayed < 64 && in.Wait(time.Second) == nil; {
		n, err := in.Poll(64, relay)
		if err != nil {
			panic(err)
		}
		relayed += n
		if err := out.Flush(); err != nil { // one doorbell for the batch
			panic(err)
		}
	}

	got, ok := 0, 0
	for got < 64 && far.Wait(time.Second) == nil {
		n, _ := far.Poll(64, func(b *skb.Buff) {
			if string(b.Data()[:8]) == "SKBTUNL0" {
				b.Pull(8) // strip the outer header
				if string(b.Data()[:9]) == "datagram " {
					ok++
				}
			}
			far.Cache().Free(b)
		})
		got += n
	}
	fmt.Println("relayed:", out.Stats().TxPackets, "datagrams received:", got, "with the header:", ok)
	// Output: relayed: 64 datagrams received: 64 with the header: 64
}
