package memring_test

import (
	"fmt"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/skb"
)

// Three packets sent with one doorbell: more=true on all but the last.
func ExampleNewPair() {
	a, b, err := memring.NewPair(memring.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := a.Cache()
	for i := range 3 {
		p, err := c.Alloc(64)
		if err != nil {
			fmt.Println(err)
			return
		}
		copy(p.Put(7), fmt.Sprintf("hello %d", i))
		a.Xmit(p, i < 2) // Xmit takes p
	}
	rc := b.Cache()
	b.Poll(8, func(p *skb.Buff) {
		fmt.Printf("%s\n", p.Data())
		rc.Free(p) // the handler owns p
	})
	st := a.Stats()
	fmt.Println("tx_packets", st.TxPackets, "tx_doorbells", st.TxDoorbells)
	a.Close()
	fmt.Println(b.Close()) // closes the pool NewPair made
	// Output:
	// hello 0
	// hello 1
	// hello 2
	// tx_packets 3 tx_doorbells 1
	// <nil>
}
