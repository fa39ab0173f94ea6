package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func run(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := New(&out, &out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestRenderFailsWhenAdmissionRefusesAndSaysWhy(t *testing.T) {
	out, err := run("render", "-f", "../render/testdata/rejected.yaml")
	require.ErrorIs(t, err, errNotRendered)
	assert.Contains(t, out, `rejected: admission webhook "vpodcliqueset.grove.io" denied the request`)
}

func TestRenderRefusesBadFlagsAndEmptyInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown output", []string{"render", "-f", "../../../config/samples/grove_v1alpha1_podcliqueset.yaml", "-o", "json"}, `--output "json": must be tree or yaml`},
		{"no file", []string{"render"}, `required flag(s) "filename" not set`},
		{"nothing to render", []string{"render", "-f", "../../../config/samples/trainer_v1alpha1_trainingruntime.yaml"}, "no PodCliqueSet and no TrainJob"},
		{"a configuration with a typo", []string{"render", "-f", "../../../config/samples/grove_v1alpha1_podcliqueset.yaml", "--config", "../render/testdata/kai-topology.yaml"}, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestStatusAndWhyTakeKindSlashName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "inference"}, "give KIND/NAME"},
		{[]string{"status", "deploy/x"}, `kind "deploy" is not one of pcs, podcliqueset`},
		{[]string{"why", "pcs/x"}, `kind "pcs" is not one of po, pod, pods`},
	} {
		_, err := run(tc.args...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestWatchRedrawsOnAClearedScreenAndShowsAFailedReadInPlace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	draws := 0
	var out bytes.Buffer
	done := make(chan error)
	go func() {
		done <- redraw(ctx, &out, 10*time.Millisecond, func(w io.Writer) error {
			draws++
			if draws == 2 {
				return fmt.Errorf("the API server is restarting")
			}
			if draws == 3 {
				cancel()
			}
			fmt.Fprintf(w, "tree %d\n", draws)
			return nil
		})
	}()
	require.NoError(t, <-done)
	assert.Equal(t, 3, strings.Count(out.String(), "\033[H\033[2J"), "each draw starts on a cleared screen")
	assert.Contains(t, out.String(), "tree 1")
	assert.Contains(t, out.String(), "error: the API server is restarting")
	assert.Contains(t, out.String(), "tree 3")
}
