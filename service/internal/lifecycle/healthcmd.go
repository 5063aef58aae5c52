package lifecycle

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// HealthCheck is `thumbd health`: images without a shell or curl use it as
// their probe. It exits 0 when /health answers 200 within the timeout. It
// asks the admin port when THUMBD_ADMIN_PORT names one, else PORT.
func HealthCheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	port := getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if admin := getenv("THUMBD_ADMIN_PORT"); admin != "" && admin != "0" {
		port = admin
	}
	fs := flag.NewFlagSet("thumbd health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:"+port+"/health", "URL to check")
	timeout := fs.Duration("timeout", 2*time.Second, "time allowed for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *url, resp.Status)
	}
	return nil
}
