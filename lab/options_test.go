package lab

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestToggle(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Toggle
		ok   bool
	}{
		{"on", On, true}, {"ON", On, true}, {"true", On, true}, {"1", On, true},
		{"off", Off, true}, {"no", Off, true}, {"0", Off, true},
		{"", Default, true}, {"default", Default, true},
		{"maybe", Default, false}, {"2", Default, false},
	} {
		got, err := ParseToggle(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseToggle(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseToggle(%q) error %v does not wrap ErrInvalid", tc.in, err)
		}
	}
	var tg Toggle = On
	if err := tg.Set("bogus"); err == nil || tg != On {
		t.Errorf("Set(bogus) = %v, left %v; want an error and On", err, tg)
	}
	if s := Toggle(7).String(); s != "Toggle(7)" {
		t.Errorf("Toggle(7).String() = %q", s)
	}
	b, err := json.Marshal(Options{GRO: On, TSO: Off})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"gro":"on"`) || !strings.Contains(s, `"tso":"off"`) || strings.Contains(s, "txcsum") {
		t.Errorf("json = %s", s)
	}
	var o Options
	if err := json.Unmarshal(b, &o); err != nil || o.GRO != On || o.TSO != Off || o.TxChecksum != Default {
		t.Errorf("round trip = %+v, %v", o, err)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"name", Options{Name: "abc-1_Z"}, true},
		{"name max", Options{Name: strings.Repeat("x", MaxNameLen)}, true},
		{"name too long", Options{Name: strings.Repeat("x", MaxNameLen+1)}, false},
		{"name space", Options{Name: "a b"}, false},
		{"name slash", Options{Name: "a/b"}, false},
		{"name dot", Options{Name: "a.b"}, false},
		{"name dash first", Options{Name: "-a"}, false},
		{"mtu negative", Options{MTU: -1}, false},
		{"mtu 67", Options{MTU: 67}, false},
		{"mtu 68", Options{MTU: 68}, true},
		{"mtu 65535", Options{MTU: 65535}, true},
		{"mtu 65536", Options{MTU: 65536}, false},
		{"queues negative", Options{Queues: -2}, false},
		{"queues max", Options{Queues: MaxQueues}, true},
		{"queues over max", Options{Queues: MaxQueues + 1}, false},
		{"toggle range", Options{TSO: 3}, false},
		{"threaded gro off", Options{Threaded: true, GRO: Off}, false},
		{"threaded gro default", Options{Threaded: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.check()
			if (err == nil) != tc.ok {
				t.Fatalf("check(%+v) = %v, want ok %v", tc.o, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

// Output of `ethtool -k` (ethtool 6.1) for a veth after `ethtool -K tx off tso on`:
// the summary line for TSO says on while the feature itself stayed off.
const ethtoolK = `Features for skbA0:
rx-checksumming: on
tx-checksumming: off
	tx-checksum-ipv4: off [fixed]
	tx-checksum-ip-generic: off
	tx-checksum-ipv6: off [fixed]
scatter-gather: on
tcp-segmentation-offload: on
	tx-tcp-segmentation: off [requested on]
	tx-tcp-ecn-segmentation: off [requested on]
generic-segmentation-offload: on
generic-receive-offload: on
large-receive-offload: off [fixed]
`

func TestParseEthtoolFeatures(t *testing.T) {
	f, err := parseEthtoolFeatures(ethtoolK)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Features{GRO: true, TSO: false, TxChecksum: false}); f != want {
		t.Errorf("got %+v, want %+v", f, want)
	}
	if _, err := parseEthtoolFeatures("Features for x:\nrx-checksumming: on\n"); err == nil {
		t.Error("partial output parsed without error")
	}
}
