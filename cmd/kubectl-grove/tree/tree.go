// Package tree draws an indented tree of lines, as kubectl grove prints workloads.
package tree

import (
	"fmt"
	"io"
	"strings"
)

// Node is one line and the lines below it.
type Node struct {
	Text     string
	Children []*Node
}

// New starts a tree at its root line.
func New(text string) *Node { return &Node{Text: text} }

// Add appends a child line and returns it.
func (n *Node) Add(text string) *Node {
	c := &Node{Text: text}
	n.Children = append(n.Children, c)
	return c
}

// Write draws the tree: the root, then each child under a branch.
func (n *Node) Write(w io.Writer) {
	fmt.Fprintln(w, n.Text)
	n.writeChildren(w, "")
}

func (n *Node) writeChildren(w io.Writer, prefix string) {
	for i, c := range n.Children {
		branch, indent := "├── ", "│   "
		if i == len(n.Children)-1 {
			branch, indent = "└── ", "    "
		}
		// A multi-line text keeps its continuation lines under the branch.
		lines := strings.Split(c.Text, "\n")
		fmt.Fprintln(w, prefix+branch+lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintln(w, prefix+indent+l)
		}
		c.writeChildren(w, prefix+indent)
	}
}
