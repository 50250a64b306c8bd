package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestWriteJSON checks bench's NDJSON: every row an object of "type":"row"
// with Row's fields, then one of "type":"result" that counts them.
func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	rep := fakeReport()
	rep.Elapsed = 1500 * time.Millisecond
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 6 rows and the result:\n%s", len(lines), buf.String())
	}
	for i, l := range lines[:6] {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if m["type"] != "row" {
			t.Errorf("line %d: type %v, want \"row\": %s", i, m["type"], l)
		}
		for _, k := range []string{"experiment", "variant", "metric", "value", "unit", "ratio", "runs", "min", "max", "stddev", "samples", "better"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d lacks %q: %s", i, k, l)
			}
		}
	}
	// A row line still decodes as a Row.
	var r Row
	if err := json.Unmarshal([]byte(lines[2]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Variant != "b" || r.Ratio == nil || *r.Ratio != 2 || r.Met == nil || !*r.Met || r.Target != ">=1.50x" {
		t.Errorf("row b: %+v", r)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[6]), &res); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "result", "rows": 6.0, "failed": 1.0, "seconds": 1.5, "others_percent": 1.0, "stopped": false}
	if len(res) != len(want) {
		t.Errorf("result %v, want %v", res, want)
	}
	for k, v := range want {
		if res[k] != v {
			t.Errorf("result %s = %v, want %v: %s", k, res[k], v, lines[6])
		}
	}
}

// TestJSONResult checks the result of a stopped run, and of one whose
// others' CPU share is unknown.
func TestJSONResult(t *testing.T) {
	rep := fakeReport()
	rep.Machine.Others = -1
	res := NewJSONResult(rep)
	res.Stopped, res.Signal = true, "SIGINT"
	res.Type = ""
	var buf bytes.Buffer
	if err := WriteJSONResult(&buf, res); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("%v: %q", err, buf.String())
	}
	if m["type"] != "result" || m["stopped"] != true || m["signal"] != "SIGINT" || m["rows"] != 6.0 {
		t.Errorf("stopped run: %v", m)
	}
	if _, ok := m["others_percent"]; ok {
		t.Errorf("others_percent present when unknown: %v", m)
	}
}
