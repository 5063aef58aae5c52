package validate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestCellsMemoryArithmetic pins the sizing's sum, so that the numbers in
// k8s/overlays/cells/memory.yaml and k8s/README.md can be checked by hand.
func TestCellsMemoryArithmetic(t *testing.T) {
	defaults := Settings{
		"THUMBD_ENGINE": "inprocess", "THUMBD_CONCURRENCY": "", "THUMBD_QUEUE": "1024", "THUMBD_SOURCE_BUDGET": "0",
		"THUMBD_CELL_SPARES": "1", "THUMBD_CELL_MAX_RSS": "268435456", "THUMBD_MAX_BODY_BYTES": "20971520",
		"THUMBD_MAX_PIXELS": "40000000", "THUMBD_MAX_SIDE": "4096", "THUMBD_MAX_ANIMATION_PIXELS": "16777216", "THUMBD_MAX_FRAMES": "256",
	}
	cases := []struct {
		name  string
		env   map[string]string
		inPod int
		limit int64 // MiB
	}{
		// k8s/overlays/cells: 40 + 10 x 20 + 2 x 470 + 1 x 128
		{"cells overlay", map[string]string{"THUMBD_ENGINE": "cells", "THUMBD_CONCURRENCY": "2", "THUMBD_QUEUE": "8", "THUMBD_SOURCE_BUDGET": "209715200", "THUMBD_CELL_SPARES": "1", "THUMBD_CELL_MAX_RSS": "134217728"}, 0, 1308},
		// defaults but the concurrency: 40 + 32 x 20 (the budget's default)
		// + 2 x 470 + 1 x 256
		{"defaults", map[string]string{"THUMBD_ENGINE": "cells", "THUMBD_CONCURRENCY": "2"}, 0, 1876},
		// a budget of 5 bodies, whatever the queue: 40 + 5 x 20 + 2 x 470 + 1 x 256
		{"budget", map[string]string{"THUMBD_ENGINE": "cells", "THUMBD_CONCURRENCY": "2", "THUMBD_QUEUE": "1024", "THUMBD_SOURCE_BUDGET": "104857600"}, 0, 1336},
		// Knative lets 2 requests in: 40 + 2 x 20 + 2 x 470 + 1 x 256
		{"knative", map[string]string{"THUMBD_ENGINE": "cells", "THUMBD_CONCURRENCY": "2"}, 2, 1276},
		// cells that may keep more than the largest job: 40 + 10 x 20 + 2 x 600 + 1 x 600
		{"bound above the job peak", map[string]string{"THUMBD_ENGINE": "cells", "THUMBD_CONCURRENCY": "2", "THUMBD_QUEUE": "8", "THUMBD_SOURCE_BUDGET": "209715200", "THUMBD_CELL_MAX_RSS": "629145600"}, 0, 2040},
		// no spares, smaller bodies: 40 + 5 x 10 + 4 x 470
		{"no spares", map[string]string{"THUMBD_ENGINE": "cells", "THUMBD_CONCURRENCY": "4", "THUMBD_QUEUE": "1", "THUMBD_SOURCE_BUDGET": "52428800", "THUMBD_CELL_SPARES": "0", "THUMBD_MAX_BODY_BYTES": "10485760"}, 0, 1970},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p problems
			m, ok := readCellsMemory(tc.env, defaults, tc.inPod, &p)
			if !ok {
				t.Fatalf("problems: %v", p)
			}
			if got := m.limit() >> 20; got != tc.limit {
				t.Errorf("limit %d MiB, want %d MiB (%s)", got, tc.limit, m)
			}
			// The limit itself passes; one MiB less does not.
			for _, lim := range []struct {
				mib  int64
				pass bool
			}{{tc.limit, true}, {tc.limit - 1, false}} {
				c := &corev1.Container{Name: "thumbd", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(lim.mib<<20, resource.BinarySI)},
				}}
				var p problems
				checkCellsMemory(c, tc.env, defaults, tc.inPod, &p)
				if (len(p) == 0) != lim.pass {
					t.Errorf("limit %d MiB: problems %v, want pass=%v", lim.mib, p, lim.pass)
				}
			}
		})
	}
}

// TestCellsMemoryOnlyInCellsMode: in process the sizing does not apply.
func TestCellsMemoryOnlyInCellsMode(t *testing.T) {
	c := &corev1.Container{Name: "thumbd", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}
	var p problems
	checkCellsMemory(c, map[string]string{"THUMBD_CONCURRENCY": "2"}, Settings{"THUMBD_ENGINE": "inprocess"}, 0, &p)
	if len(p) != 0 {
		t.Errorf("in process: %v", p)
	}
}
