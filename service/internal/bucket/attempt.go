package bucket

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"

	"github.com/minio/minio-go/v7"
)

// attempt is one try at a call. minio-go sleeps up to 200 ms after a failed
// try before it returns, even with its retries off (its retry timer waits
// after the last try too), and then answers the context's error instead of
// the failure when the deadline passed meanwhile. So the transport ends the
// try itself at its first failure, keeping what failed here for classify:
// a failure costs its round trip and no more, and keeps its words.
type attempt struct {
	cancel context.CancelFunc
	resp   minio.ErrorResponse // a failed status, with the body's error document
	err    error               // a transport error
}

type attemptKey struct{}

// newAttempt starts a try within ctx, bounded by the client's timeout.
func (c *Client) newAttempt(ctx context.Context) (context.Context, *attempt) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	a := &attempt{cancel: cancel}
	return context.WithValue(ctx, attemptKey{}, a), a
}

// failure is what the try's transport saw fail, or err (minio-go's
// answer) when it saw nothing.
func (a *attempt) failure(err error) error {
	switch {
	case a.err != nil:
		return a.err
	case a.resp.StatusCode != 0:
		return a.resp
	}
	return err
}

// endOnFailure is the transport under minio-go.
type endOnFailure struct{ next http.RoundTripper }

// maxErrorBody bounds an error document read (S3's are under 1 KiB).
const maxErrorBody = 64 << 10

func (t endOnFailure) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	a, _ := req.Context().Value(attemptKey{}).(*attempt)
	if a == nil {
		return resp, err
	}
	if err != nil {
		a.err = err
		a.cancel()
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent, http.StatusPartialContent:
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	a.resp = minio.ErrorResponse{}
	xml.Unmarshal(body, &a.resp) // a HEAD's error has no body: the status says it
	a.resp.StatusCode = resp.StatusCode
	if a.resp.Message == "" {
		a.resp.Message = resp.Status + ", without an error document" // a HEAD's, which the log shows
	}
	a.cancel()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
