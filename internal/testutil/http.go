package testutil

import "net/http"

// ResponseWriter is a reusable http.ResponseWriter for handler benchmarks:
// it keeps the status and the body, and Reset readies it for the next
// request without allocating.
type ResponseWriter struct {
	Status int
	Body   []byte
	h      http.Header
}

// NewResponseWriter returns an empty ResponseWriter.
func NewResponseWriter() *ResponseWriter { return &ResponseWriter{h: http.Header{}} }

// Header implements http.ResponseWriter.
func (w *ResponseWriter) Header() http.Header { return w.h }

// WriteHeader implements http.ResponseWriter: the first status counts.
func (w *ResponseWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
}

// Write implements http.ResponseWriter, keeping the bytes.
func (w *ResponseWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	w.Body = append(w.Body, b...)
	return len(b), nil
}

// Reset forgets the last response, keeping the buffers.
func (w *ResponseWriter) Reset() {
	clear(w.h)
	w.Status, w.Body = 0, w.Body[:0]
}
