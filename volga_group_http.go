package volga

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/volga-go/volga/request"
)

// Service returns the group member as a request.Service: a lookup of a
// key this member owns is answered by its partition's pipeline (with the
// type conversions of Pipeline.Service); one it does not own fails with
// a *NotOwnerError marked request.ErrUnavailable (errors.As finds it),
// which request.NewHandler answers as Handler describes (it is a
// request.Responder).
func (g *Group) Service() request.Service { return groupService{g} }

type groupService struct{ g *Group }

func (s groupService) KeyColumns() []string { return s.g.keyCols }

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

// Handler serves the member's lookups over HTTP, like Pipeline.Handler:
// request.NewHandler over Service. A request for a key whose partition
// another member owns is answered 421 Misdirected Request, with the
// owner's advertised address (GroupConfig.Advertise) in the
// X-Volga-Owner header and in the JSON body:
//
//	{"error": "volga: partition 3 is owned by http://10.0.0.8:8080", "partition": 3, "owner": "http://10.0.0.8:8080", "member": "..."}
//
// A client retries there. In a batch, the first such key decides (keys
// of this member's partitions before it are looked up, and their
// answers dropped). While the group rebalances a partition has no owner:
// 503 with Retry-After: 1, try again. Both count in the handler's
// metrics (request.WithMetrics) under their status.
func (g *Group) Handler(opts ...request.HandlerOption) http.Handler {
	return request.NewHandler(g.Service(), opts...)
}

// WriteResponse answers an HTTP lookup of a key of e's partition, for
// request.NewHandler (NotOwnerError is a request.Responder): 421
// Misdirected Request naming the owner (see Group.Handler), or, when the
// partition has no owner now, 503 Service Unavailable with Retry-After: 1.
func (e *NotOwnerError) WriteResponse(w http.ResponseWriter) {
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
	status := http.StatusMisdirectedRequest
	if e.Member == "" {
		w.Header().Set("Retry-After", "1")
		status = http.StatusServiceUnavailable
	}
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
