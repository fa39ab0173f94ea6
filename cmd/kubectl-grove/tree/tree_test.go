package tree

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWriteDrawsBranchesAndKeepsDeeperLinesUnderTheirParent(t *testing.T) {
	root := New("root")
	a := root.Add("a")
	a.Add("a1")
	a.Add("a2\ncontinued")
	root.Add("b").Add("b1")
	var out bytes.Buffer
	root.Write(&out)
	assert.Equal(t, `root
├── a
│   ├── a1
│   └── a2
│       continued
└── b
    └── b1
`, out.String())
}
