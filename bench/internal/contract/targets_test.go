package contract

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/internal/launch"
)

// The real targets pass the checks the bench runs on them: the Node twin
// (when scripts/deps.sh node has installed its packages) and a thumbd built
// here against Debian's libvips, on the small photo in every format and on
// the animated source.
func TestRealTargetsPassTheThumbnailChecks(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	small, err := sources.Make(mustRecipe(t, "small"))
	if err != nil {
		t.Fatal(err)
	}
	animated, err := sources.Make(mustRecipe(t, "animated"))
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Thumbs: []Thumb{
		{Route: "thumb-small", Path: "/thumbnail?w=256&h=256&fit=cover&format=png", Format: "png", Body: small},
		{Route: "thumb-small-jpeg", Path: "/thumbnail?w=256&h=256&fit=cover&format=jpeg&q=80", Format: "jpeg", Body: small},
		{Route: "thumb-small-webp", Path: "/thumbnail?w=256&h=256&fit=cover&format=webp&q=80", Format: "webp", Body: small},
		{Route: "thumb-small-avif", Path: "/thumbnail?w=256&h=256&fit=cover&format=avif&q=58", Format: "avif", Body: small},
		{Route: "thumb-animated-webp", Path: "/thumbnail?w=256&h=256&fit=cover&format=webp&q=80&animated=true", Format: "webp", Animated: true, Body: animated},
	}, Infos: []Info{
		{Route: "info-small", Path: "/info", Format: "jpeg", Width: 400, Height: 300, Body: small},
		{Route: "info-small-header", Path: "/info?thumbhash=false", Format: "jpeg", Width: 400, Height: 300, Body: small},
	}}
	check := func(t *testing.T, spec launch.Spec) {
		srv, err := launch.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop(10 * time.Second)
		if err := srv.WaitReady(context.Background(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		for _, c := range Run(context.Background(), srv.URL(), in)[6:] { // the thumbnails and /info
			if !c.OK {
				t.Errorf("%s: %s", c.Route, c.Detail)
			} else {
				t.Logf("%s: %s", c.Route, c.Detail)
			}
		}
	}
	t.Run("node", func(t *testing.T) {
		twin := filepath.Join(root, "bench", "twins", "node")
		if _, err := os.Stat(filepath.Join(twin, "node_modules", "sharp")); err != nil {
			t.Skip("the twin's packages are not installed (scripts/deps.sh node)")
		}
		check(t, launch.Spec{Command: []string{"node", "server.mjs"}, Dir: twin})
	})
	t.Run("thumbd", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds and runs thumbd")
		}
		bin := filepath.Join(t.TempDir(), "thumbd")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/thumbd/thumbd/service").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		check(t, launch.Spec{Command: []string{bin}})
	})
}

func mustRecipe(t *testing.T, name string) sources.Recipe {
	t.Helper()
	r, err := sources.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
