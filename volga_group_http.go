package volga

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/volga-go/volga/request"
)

// Service returns the group member as a request.Service: a lookup of a
// key this member owns is answered by its partition's pipeline (with the
// type conversions of Pipeline.Service); one it does not own fails with
// a *NotOwnerError marked request.ErrUnavailable (errors.As finds it).
func (g *Group) Service() request.Service { return groupService{g} }

type groupService struct{ g *Group }

func (s groupService) KeyColumns() []string { return s.g.KeyColumns() }

func (s groupService) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (request.Features, error) {
	if s.g.lookupOK != nil {
		return request.Features{}, s.g.lookupOK
	}
	p, err := s.g.route(ctx, key)
	var noe *NotOwnerError
	switch {
	case errors.As(err, &noe):
		return request.Features{}, request.Unavailable(err)
	case errors.Is(err, request.ErrUnavailable):
		return request.Features{}, err // the owner could not be asked for
	case err != nil:
		return request.Features{}, request.Invalid(err)
	}
	return p.Service().Lookup(ctx, key, at, row)
}

// groupPeekBytes is the most of a request body the group handler reads
// to route it; a larger body goes to the lookup handler unrouted.
const groupPeekBytes = 1 << 20

// Handler serves the member's lookups over HTTP, like Pipeline.Handler
// (request.NewHandler over Service). A request for a key whose partition
// another member owns is answered 421 Misdirected Request, with the
// owner's advertised address (GroupConfig.Advertise) in the
// X-Volga-Owner header and in the JSON body:
//
//	{"error": "volga: partition 3 is owned by http://10.0.0.8:8080", "partition": 3, "owner": "http://10.0.0.8:8080", "member": "..."}
//
// A client retries there. In a batch, the first such key decides. While
// the group rebalances a partition has no owner: 503, try again.
func (g *Group) Handler(opts ...request.HandlerOption) http.Handler {
	inner := request.NewHandler(g.Service(), opts...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != request.FeaturesPath || r.Method != http.MethodPost || r.Body == nil {
			inner.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, groupPeekBytes+1))
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if err == nil && len(body) <= groupPeekBytes {
			if noe := g.misdirected(r.Context(), body); noe != nil {
				writeMisdirected(w, noe)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
}

// misdirected returns the NotOwnerError of the first key of a request
// body that another member owns. Bodies it cannot read, and keys it
// cannot place, are left to the lookup handler to refuse.
func (g *Group) misdirected(ctx context.Context, body []byte) *NotOwnerError {
	if g.lookupOK != nil {
		return nil
	}
	type req struct {
		Key map[string]any `json:"key"`
	}
	var reqs []req
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if dec.Decode(&reqs) != nil {
			return nil
		}
	} else {
		var one req
		if dec.Decode(&one) != nil {
			return nil
		}
		reqs = append(reqs, one)
	}
	for _, rq := range reqs {
		if rq.Key == nil {
			return nil
		}
		for col, v := range rq.Key {
			if n, ok := v.(json.Number); ok {
				rq.Key[col] = jsonNumber(n)
			}
		}
		_, err := g.route(ctx, rq.Key)
		var noe *NotOwnerError
		if errors.As(err, &noe) && noe.Member != "" {
			return noe
		}
	}
	return nil
}

// jsonNumber is a JSON number as the lookup handler reads a key value:
// an int64, a uint64 beyond int64's range, or else a float64 (42.0 and
// 4.2e1 are integers to an integer column), so that the key is placed
// in the partition its lookup would be answered from. A number float64
// cannot hold stays as it is (the lookup handler refuses it).
func jsonNumber(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
		return u
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return n
}

func writeMisdirected(w http.ResponseWriter, e *NotOwnerError) {
	b, _ := json.Marshal(struct {
		Error     string `json:"error"`
		Partition int    `json:"partition"`
		Owner     string `json:"owner"`
		Member    string `json:"member"`
	}{e.Error(), e.Partition, e.Owner, e.Member})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if e.Owner != "" {
		w.Header().Set("X-Volga-Owner", e.Owner)
	}
	w.Header().Set("X-Volga-Partition", strconv.Itoa(e.Partition))
	w.WriteHeader(http.StatusMisdirectedRequest)
	w.Write(append(b, '\n'))
}
