package validate

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CheckDockerfile compares the final stage of a Dockerfile with the pod that
// runs its image: the numeric USER must be the user (and group) the pod runs
// as, and the EXPOSEd port the container's port.
func CheckDockerfile(name string, dockerfile []byte, spec *corev1.PodSpec) []error {
	var p problems
	user, exposed := finalStage(dockerfile)
	if len(spec.Containers) != 1 {
		p.addf("the pod must have exactly one container, has %d", len(spec.Containers))
		return p
	}
	c := &spec.Containers[0]
	uid, gid := effectiveIDs(spec, c)
	wantUID, wantGID, _ := strings.Cut(user, ":")
	switch {
	case user == "":
		p.addf("%s has no USER: the image would run as root", name)
	case uid == nil || strconv.FormatInt(*uid, 10) != wantUID:
		p.addf("%s runs as USER %s, but the pod sets runAsUser %v", name, user, deref(uid))
	case wantGID != "" && (gid == nil || strconv.FormatInt(*gid, 10) != wantGID):
		p.addf("%s runs as USER %s, but the pod sets runAsGroup %v", name, user, deref(gid))
	}
	for _, port := range exposed {
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return strconv.Itoa(int(cp.ContainerPort)) == port }) {
			p.addf("%s EXPOSEs %s, which container %s does not declare", name, port, c.Name)
		}
	}
	return p
}

// finalStage returns the USER and EXPOSEd ports of the last stage.
func finalStage(dockerfile []byte) (user string, exposed []string) {
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			user, exposed = "", nil
		case "USER":
			user = fields[1]
		case "EXPOSE":
			for _, f := range fields[1:] {
				exposed = append(exposed, strings.TrimSuffix(f, "/tcp"))
			}
		}
	}
	return user, exposed
}

// effectiveIDs is the user and group the container runs as, where the pod says.
func effectiveIDs(spec *corev1.PodSpec, c *corev1.Container) (uid, gid *int64) {
	if psc := spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	return uid, gid
}

func deref(v *int64) string {
	if v == nil {
		return "(unset)"
	}
	return fmt.Sprint(*v)
}
