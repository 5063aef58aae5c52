package validate

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// checkStoreGrowth counts docs/hardening.md's arithmetic of the bounded
// unsigned mode: the widths, the qualities and the transforms' values a
// client may combine, per source, held to maxAnswersPerSource.
func TestStoreGrowthCount(t *testing.T) {
	next := "16,32,48,64,96,128,256,384,640,750,828,1080,1200,1920,2048,3840"
	var blurs []string
	for i := 1; i <= 9; i++ {
		blurs = append(blurs, fmt.Sprintf("blur=%d", i))
	}
	secret := corev1.EnvVar{Name: "THUMBD_SIGNING_KEYS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "keys"}}}
	for _, c := range []struct {
		name   string
		env    map[string]string
		signed bool
		want   string // a word of the problem; "": none
	}{
		{"no store", map[string]string{}, false, ""},
		{"no lists", map[string]string{"THUMBD_RESULT_STORE": "/store"}, false, "without allow-lists"},
		{"widths only", map[string]string{"THUMBD_RESULT_STORE": "/store", "THUMBD_ALLOWED_WIDTHS": next}, false, "without allow-lists"},
		// 17² boxes x 3 qualities x 4 fits x 11 gravities x 8 formats x 2 x 2
		{"Next.js's defaults", map[string]string{"THUMBD_RESULT_STORE": "/store", "THUMBD_ALLOWED_WIDTHS": next, "THUMBD_ALLOWED_QUALITIES": "75"}, false, ""},
		// ... x (9 + 1) blurs
		{"nine blurs", map[string]string{"THUMBD_RESULT_STORE": "/store", "THUMBD_ALLOWED_WIDTHS": next, "THUMBD_ALLOWED_QUALITIES": "75", "THUMBD_ALLOWED_TRANSFORMS": strings.Join(blurs, ";")}, false, "up to 12207360 answers"},
		// 17² x (3 + 2) qualities x 4 x (11 + 1 x 2 focal points) x 8 x 2 x 2
		// x (4 + 1) pads; a value given twice is counted once
		{"pads and focal points", map[string]string{"THUMBD_RESULT_STORE": "/store", "THUMBD_ALLOWED_WIDTHS": next + ",16", "THUMBD_ALLOWED_QUALITIES": "50, 75,90", "THUMBD_ALLOWED_TRANSFORMS": "pad=8;pad=16;pad=8;pad=24;pad=32;fx=0.5;fy=0.25;fy=0.75"}, false, "up to 12022400 answers"},
		{"three pads", map[string]string{"THUMBD_RESULT_STORE": "/store", "THUMBD_ALLOWED_WIDTHS": next, "THUMBD_ALLOWED_QUALITIES": "50,75,90", "THUMBD_ALLOWED_TRANSFORMS": "pad=8;pad=16;pad=24;fx=0.5;fy=0.25;fy=0.75"}, false, ""}, // 9,617,920
		{"signed", map[string]string{"THUMBD_RESULT_STORE": "/store", "THUMBD_ALLOWED_TRANSFORMS": strings.Join(blurs, ";")}, true, ""},
	} {
		ctr := &corev1.Container{Name: "thumbd"}
		if c.signed {
			ctr.Env = []corev1.EnvVar{secret}
		}
		var p problems
		checkStoreGrowth(ctr, c.env, Settings{}, false, &p)
		switch {
		case c.want == "" && len(p) > 0:
			t.Errorf("%s: %v", c.name, p)
		case c.want != "" && (len(p) != 1 || !strings.Contains(p[0].Error(), c.want)):
			t.Errorf("%s: %v, want one problem saying %q", c.name, p, c.want)
		}
	}
}
