package header

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var writeCorpus = flag.Bool("write-corpus", false, "write gopacket-built seed packets into testdata/fuzz")

// TestWriteFuzzCorpus writes the gopacket-built packets, cut at each layer,
// as seed files of the fuzz targets (go test -run TestWriteFuzzCorpus
// -write-corpus ./header). The files are committed, so the seeds stay
// fixed even if the code building them changes.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run with -write-corpus to rewrite testdata/fuzz seeds")
	}
	pkts := gpPackets(t)
	names := make([]string, 0, len(pkts))
	for name := range pkts {
		names = append(names, name)
	}
	sort.Strings(names)
	write := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "seed-"+strings.ReplaceAll(name, " ", "-"))
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		b := pkts[name]
		fr, err := ParseFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		write("FuzzParseFrame", name, b)
		write("FuzzEthernet", name, b)
		switch fr.EtherType {
		case EtherTypeIPv4:
			write("FuzzIPv4", name, b[fr.NetworkOffset:])
		case EtherTypeIPv6:
			write("FuzzIPv6", name, b[fr.NetworkOffset:])
		case EtherTypeARP:
			write("FuzzARP", name, b[fr.NetworkOffset:])
		}
		if fr.VLANProto != 0 {
			write("FuzzVLAN", name, b[EthernetHeaderLen:])
		}
		if fr.TransportOffset == 0 {
			continue
		}
		switch fr.Protocol {
		case IPProtoUDP:
			write("FuzzUDP", name, b[fr.TransportOffset:fr.End])
		case IPProtoTCP:
			write("FuzzTCP", name, b[fr.TransportOffset:fr.End])
		case IPProtoICMP, IPProtoICMPv6:
			write("FuzzICMP", name, b[fr.TransportOffset:fr.End])
		}
	}
}
