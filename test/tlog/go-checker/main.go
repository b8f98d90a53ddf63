// Command go-checker checks our log's formats with Go's own implementations,
// golang.org/x/mod/sumdb/tlog and golang.org/x/mod/sumdb/note, the way an auditor
// outside this project would. It reads one JSON request on stdin and writes one JSON
// reply on stdout: a result per item (ok, or Go's error text), plus values Go computes
// (roots, stored-hash indexes, tiles, signed notes) for the caller to compare with ours.
//
// Build without modules against Debian's golang-golang-x-mod-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o go-checker main.go
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type request struct {
	VerifierKey string   `json:"verifierKey"`
	Checkpoints []string `json:"checkpoints"`
	Inclusion   []struct {
		Leaf     string   `json:"leaf"`
		LogIndex int64    `json:"logIndex"`
		TreeSize int64    `json:"treeSize"`
		Hashes   []string `json:"hashes"`
	} `json:"inclusion"`
	Consistency []struct {
		From   int64    `json:"from"`
		To     int64    `json:"to"`
		Hashes []string `json:"hashes"`
	} `json:"consistency"`
	// Leaves: Go builds its own tree of them and reports its roots and proofs.
	Leaves     []string   `json:"leaves"`
	StoredHash [][2]int64 `json:"storedHashIndex"`
	NewTiles   [][3]int64 `json:"newTiles"`
	Sign       []struct {
		SignerKey string `json:"signerKey"`
		Text      string `json:"text"`
	} `json:"sign"`
}

type checkpoint struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	Root   string `json:"root"`
}

type reply struct {
	Checkpoints     []result     `json:"checkpoints"`
	Opened          []checkpoint `json:"opened"`
	Inclusion       []result     `json:"inclusion"`
	Consistency     []result     `json:"consistency"`
	Roots           []string     `json:"roots"`
	RecordProofs    [][]string   `json:"recordProofs"`
	TreeProofs      [][]string   `json:"treeProofs"`
	StoredHashIndex []int64      `json:"storedHashIndex"`
	NewTiles        [][]string   `json:"newTiles"`
	Signed          []string     `json:"signed"`
}

type result struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func fail(err error) result { return result{OK: false, Error: err.Error()} }

func hashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(list))
	for i, s := range list {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, fmt.Errorf("hash %d: %v", i, err)
		}
		out[i] = h
	}
	return out, nil
}

// parseCheckpoint reads a C2SP tlog-checkpoint body: origin, decimal size, base64 root.
func parseCheckpoint(text string) (checkpoint, tlog.Hash, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return checkpoint{}, tlog.Hash{}, fmt.Errorf("malformed checkpoint")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return checkpoint{}, tlog.Hash{}, fmt.Errorf("malformed checkpoint size")
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return checkpoint{}, tlog.Hash{}, err
	}
	return checkpoint{Origin: lines[0], Size: size, Root: root.String()}, root, nil
}

type memoryHashes []tlog.Hash

func (m memoryHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(m)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = m[x]
	}
	return out, nil
}

func hashStrings(list []tlog.Hash) []string {
	out := make([]string, len(list))
	for i, h := range list {
		out[i] = h.String()
	}
	return out
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "go-checker: bad request:", err)
		os.Exit(2)
	}
	rep := reply{}
	roots := map[int64]tlog.Hash{}

	var verifiers note.Verifiers
	if req.VerifierKey != "" {
		v, err := note.NewVerifier(req.VerifierKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-checker: verifier key:", err)
			os.Exit(2)
		}
		verifiers = note.VerifierList(v)
	}
	for _, msg := range req.Checkpoints {
		n, err := note.Open([]byte(msg), verifiers)
		if err != nil {
			rep.Checkpoints = append(rep.Checkpoints, fail(err))
			rep.Opened = append(rep.Opened, checkpoint{})
			continue
		}
		cp, root, err := parseCheckpoint(n.Text)
		if err != nil {
			rep.Checkpoints = append(rep.Checkpoints, fail(err))
			rep.Opened = append(rep.Opened, checkpoint{})
			continue
		}
		roots[cp.Size] = root
		rep.Checkpoints = append(rep.Checkpoints, result{OK: true})
		rep.Opened = append(rep.Opened, cp)
	}

	for _, p := range req.Inclusion {
		rep.Inclusion = append(rep.Inclusion, func() result {
			root, ok := roots[p.TreeSize]
			if !ok {
				return fail(fmt.Errorf("no verified checkpoint of size %d", p.TreeSize))
			}
			leaf, err := base64.StdEncoding.DecodeString(p.Leaf)
			if err != nil {
				return fail(err)
			}
			proof, err := hashes(p.Hashes)
			if err != nil {
				return fail(err)
			}
			if err := tlog.CheckRecord(proof, p.TreeSize, root, p.LogIndex, tlog.RecordHash(leaf)); err != nil {
				return fail(err)
			}
			return result{OK: true}
		}())
	}

	for _, p := range req.Consistency {
		rep.Consistency = append(rep.Consistency, func() result {
			from, okFrom := roots[p.From]
			to, okTo := roots[p.To]
			if !okFrom || !okTo {
				return fail(fmt.Errorf("no verified checkpoints of sizes %d and %d", p.From, p.To))
			}
			proof, err := hashes(p.Hashes)
			if err != nil {
				return fail(err)
			}
			if err := tlog.CheckTree(proof, p.To, to, p.From, from); err != nil {
				return fail(err)
			}
			return result{OK: true}
		}())
	}

	if len(req.Leaves) > 0 {
		var stored memoryHashes
		for i, s := range req.Leaves {
			leaf, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				fmt.Fprintln(os.Stderr, "go-checker: leaf:", err)
				os.Exit(2)
			}
			hs, err := tlog.StoredHashes(int64(i), leaf, stored)
			if err != nil {
				fmt.Fprintln(os.Stderr, "go-checker: StoredHashes:", err)
				os.Exit(2)
			}
			stored = append(stored, hs...)
		}
		n := int64(len(req.Leaves))
		for t := int64(1); t <= n; t++ {
			root, err := tlog.TreeHash(t, stored)
			if err != nil {
				fmt.Fprintln(os.Stderr, "go-checker: TreeHash:", err)
				os.Exit(2)
			}
			rep.Roots = append(rep.Roots, root.String())
			// Proofs of the first and last leaf in each size, and from size 1 and t-1.
			for _, i := range []int64{0, t - 1} {
				p, err := tlog.ProveRecord(t, i, stored)
				if err != nil {
					fmt.Fprintln(os.Stderr, "go-checker: ProveRecord:", err)
					os.Exit(2)
				}
				rep.RecordProofs = append(rep.RecordProofs, hashStrings(p))
			}
			for _, m := range []int64{1, t - 1} {
				if m < 1 {
					m = 1
				}
				p, err := tlog.ProveTree(t, m, stored)
				if err != nil {
					fmt.Fprintln(os.Stderr, "go-checker: ProveTree:", err)
					os.Exit(2)
				}
				rep.TreeProofs = append(rep.TreeProofs, hashStrings(p))
			}
		}
	}

	for _, ln := range req.StoredHash {
		rep.StoredHashIndex = append(rep.StoredHashIndex, tlog.StoredHashIndex(int(ln[0]), ln[1]))
	}
	for _, args := range req.NewTiles {
		var paths []string
		for _, t := range tlog.NewTiles(int(args[0]), args[1], args[2]) {
			paths = append(paths, t.Path())
		}
		rep.NewTiles = append(rep.NewTiles, paths)
	}
	for _, s := range req.Sign {
		signer, err := note.NewSigner(s.SignerKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-checker: signer key:", err)
			os.Exit(2)
		}
		msg, err := note.Sign(&note.Note{Text: s.Text}, signer)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-checker: sign:", err)
			os.Exit(2)
		}
		rep.Signed = append(rep.Signed, string(msg))
	}

	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		os.Exit(2)
	}
}
