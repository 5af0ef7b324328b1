package sidecar_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

// longOutput is an ended exact process whose stdout is chunks chunks of
// chunk bytes; like a real provider, every iteration replays from the
// start and hands out a copy of each chunk. replayed counts the bytes
// it yielded across iterations.
type longOutput struct {
	chunk    []byte
	chunks   int
	replayed atomic.Int64
}

// chunkAt is chunk i: the chunk with i in its first two bytes, so a
// byte read from a wrong offset shows.
func (p *longOutput) chunkAt(i int) []byte {
	b := bytes.Clone(p.chunk)
	b[0], b[1] = byte(i), byte(i>>8)
	return b
}

// all is the whole stream.
func (p *longOutput) all() []byte {
	var b []byte
	for i := range p.chunks {
		b = append(b, p.chunkAt(i)...)
	}
	return b
}

func (p *longOutput) PID() int64 { return 1 }
func (p *longOutput) Status(context.Context) (*contract.ExactProcessStatus, error) {
	zero := int64(0)
	return &contract.ExactProcessStatus{PID: 1, Termination: &contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: &zero}}, nil
}
func (p *longOutput) Wait(context.Context) (*contract.ProcessTermination, error) {
	zero := int64(0)
	return &contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: &zero}, nil
}
func (p *longOutput) Kill(context.Context) error { return nil }
func (p *longOutput) Stdout(ctx context.Context) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for i := range p.chunks {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			p.replayed.Add(int64(len(p.chunk)))
			if !yield(p.chunkAt(i), nil) {
				return
			}
		}
	}
}
func (p *longOutput) Stderr(context.Context) iter.Seq2[[]byte, error] {
	return func(func([]byte, error) bool) {}
}

// longHost serves one exact environment "env-long" holding the process.
type longHost struct {
	*scripted.Provider
	proc *longOutput
}

func (h longHost) ExactProcess() contract.ExactProcessProvider { return longFacet{proc: h.proc} }

type longFacet struct {
	contract.ExactProcessProvider
	proc *longOutput
}

func (f longFacet) Get(_ context.Context, id string) (contract.ExactProcessEnvironment, error) {
	if id != "env-long" {
		return nil, nil
	}
	return longEnv{proc: f.proc}, nil
}

type longEnv struct {
	contract.ExactProcessEnvironment
	proc *longOutput
}

func (e longEnv) ID() string                              { return "env-long" }
func (e longEnv) Processes() contract.ExactProcessManager { return longManager{proc: e.proc} }

type longManager struct {
	contract.ExactProcessManager
	proc *longOutput
}

// Get knows pid 1, the process, and pids 2..1000, each the same output
// under its own pid.
func (m longManager) Get(_ context.Context, pid int64) (contract.ExactProcess, error) {
	switch {
	case pid == 1:
		return m.proc, nil
	case pid > 1 && pid <= 1000:
		return pidAlias{m.proc, pid}, nil
	}
	return nil, nil
}

type pidAlias struct {
	*longOutput
	pid int64
}

func (p pidAlias) PID() int64 { return p.pid }

// readOutput reads pid 1's stdout from offset through the handler.
func readOutput(tb testing.TB, s *sidecar.Server, offset int64) (data []byte, end bool) {
	tb.Helper()
	return readOutputOf(tb, s, 1, offset)
}

func readOutputOf(tb testing.TB, s *sidecar.Server, pid, offset int64) (data []byte, end bool) {
	tb.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/exact/environments/env-long/processes/"+strconv.FormatInt(pid, 10)+"/output/stdout?offset="+strconv.FormatInt(offset, 10), nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("output at %d: %d %s", offset, rec.Code, rec.Body)
	}
	chunk, err := wire.ParseExactOutputChunk(rec.Body.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	data, err = base64.StdEncoding.DecodeString(chunk.Data)
	if err != nil {
		tb.Fatal(err)
	}
	return data, chunk.End
}

func newLongServer(tb testing.TB, proc *longOutput) *sidecar.Server {
	tb.Helper()
	s, err := sidecar.New(longHost{Provider: newScripted(tb), proc: proc}, sidecar.Options{Token: testToken})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkExactOutput reads a 64 MiB stdout written in 4 KiB chunks by
// byte offset, as providers/remote does: "whole" reads it from 0 to its
// end, each read at the offset the last one ended (issue 14, serve gaps
// item 2: each read should cost what it returns, not a replay up to its
// offset); "tail" then reads the last 4 KiB again, as a client re-sending
// a read whose answer it lost.
func BenchmarkExactOutput(b *testing.B) {
	const chunk, chunks = 4 << 10, 16 << 10 // 64 MiB
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(chunk * chunks)
		var replayed int64
		for range b.N {
			proc := &longOutput{chunk: bytes.Repeat([]byte{'x'}, chunk), chunks: chunks}
			s := newLongServer(b, proc)
			var off int64
			for {
				data, end := readOutput(b, s, off)
				off += int64(len(data))
				if end {
					break
				}
			}
			if off != chunk*chunks {
				b.Fatalf("read %d bytes, want %d", off, chunk*chunks)
			}
			replayed += proc.replayed.Load()
		}
		b.ReportMetric(float64(replayed)/float64(b.N)/float64(chunk*chunks), "replays/op")
	})
	b.Run("tail", func(b *testing.B) {
		b.ReportAllocs()
		proc := &longOutput{chunk: bytes.Repeat([]byte{'x'}, chunk), chunks: chunks}
		s := newLongServer(b, proc)
		tail := int64(chunk*chunks - chunk)
		var off int64
		for off < tail {
			data, _ := readOutput(b, s, off)
			off += int64(len(data))
		}
		proc.replayed.Store(0)
		b.ResetTimer()
		for range b.N {
			if data, end := readOutput(b, s, tail); len(data) != chunk || !end {
				b.Fatalf("tail read %d bytes (end %v), want %d and the end", len(data), end, chunk)
			}
		}
		b.ReportMetric(float64(proc.replayed.Load())/float64(b.N), "replayed-B/op")
	})
}

// Issue 14 (serve gaps, item 2): reading a long output by offset, as
// providers/remote does, replays the provider's stream once in all
// rather than once per read, and returns exactly the stream's bytes; a
// read re-sent after a lost answer (the same offset) gets the same bytes
// (a prefix of them, or more) without a replay; a read before what the server kept replays
// once and is still exact, and a read past the end is the end.
func TestExactOutputReadCostsWhatItReturns(t *testing.T) {
	const chunk, chunks = 4 << 10, 2 << 10 // 8 MiB
	proc := &longOutput{chunk: bytes.Repeat([]byte{'x'}, chunk), chunks: chunks}
	s := newLongServer(t, proc)
	want := proc.all()
	var got []byte
	reads := 0
	for {
		data, end := readOutput(t, s, int64(len(got)))
		// A re-sent read gets the same bytes (and maybe more that
		// arrived meanwhile).
		if again, _ := readOutput(t, s, int64(len(got))); !bytes.HasPrefix(again, data) && !bytes.HasPrefix(data, again) {
			t.Fatalf("a re-sent read at %d got %d bytes that differ from the first read's %d", len(got), len(again), len(data))
		}
		got = append(got, data...)
		reads++
		if end {
			break
		}
		if reads > chunks {
			t.Fatal("the stream never ended")
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes that differ from the stream's %d", len(got), len(want))
	}
	if reads < 2 {
		t.Fatalf("%d reads: the test wants several", reads)
	}
	if n := proc.replayed.Load(); n != int64(len(want)) {
		t.Fatalf("the provider replayed %d bytes for %d reads of %d, want one replay", n, reads, len(want))
	}
	mid := int64(len(want) / 3)
	data, _ := readOutput(t, s, mid)
	if len(data) == 0 || !bytes.Equal(data, want[mid:mid+int64(len(data))]) {
		t.Fatalf("a read back at %d got %d wrong bytes", mid, len(data))
	}
	if data, end := readOutput(t, s, int64(len(want))+10); len(data) != 0 || !end {
		t.Fatalf("a read past the end got %d bytes, end %v; want none and the end", len(data), end)
	}
}

// Many clients read many streams at once, more streams than the server
// keeps cursors for (sidecar.MaxOutputCursors): every read is exact,
// whichever cursor it finds, replaces or loses to eviction.
func TestExactOutputConcurrentReadsPastTheCursorBound(t *testing.T) {
	const chunk, chunks = 4 << 10, 300 // 1.2 MiB: two reads each
	proc := &longOutput{chunk: bytes.Repeat([]byte{'y'}, chunk), chunks: chunks}
	s := newLongServer(t, proc)
	want := proc.all()
	streams := int64(2*sidecar.MaxOutputCursors + 5)
	var wg sync.WaitGroup
	errs := make(chan string, streams)
	for w := range int64(4) {
		wg.Go(func() {
			for pid := 1 + w; pid <= streams; pid += 4 {
				var got []byte
				for range chunks {
					data, end := readOutputOf(t, s, pid, int64(len(got)))
					got = append(got, data...)
					if end {
						break
					}
				}
				if !bytes.Equal(got, want) {
					errs <- fmt.Sprintf("pid %d: read %d bytes that differ from the stream's %d", pid, len(got), len(want))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
