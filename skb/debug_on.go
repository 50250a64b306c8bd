//go:build skbdebug

package skb

// checkLive panics when b is used after it was freed. Built with the skbdebug
// tag only, so that it costs nothing otherwise.
func (b *Buff) checkLive() {
	if b.state == stateFree {
		panic("skb: use after free of " + b.describe())
	}
}
