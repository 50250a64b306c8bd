//go:build !skbdebug

package skb

// checkLive is empty without the skbdebug build tag; see debug_on.go.
func (b *Buff) checkLive() {}
