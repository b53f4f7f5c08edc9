package main

// The checks of what `make release` left in dist/ (make release-check):
// each artefact as the person who installs it meets it.

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// dist is the dist/ to check, its version and commit, from make.
func dist(t *testing.T) (dir, version, commit string) {
	t.Helper()
	dir, version, commit = os.Getenv("JARVIS_DIST"), os.Getenv("JARVIS_VERSION"), os.Getenv("JARVIS_COMMIT")
	if dir == "" || version == "" || commit == "" {
		t.Fatal("run by make release-check, which sets JARVIS_DIST, JARVIS_VERSION and JARVIS_COMMIT")
	}
	return dir, version, commit
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBinaries: each binary is a static executable of its architecture,
// and the one this machine runs says its version and commit.
func TestBinaries(t *testing.T) {
	dir, version, commit := dist(t)
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, arch := range arches {
		t.Run(arch, func(t *testing.T) {
			path := filepath.Join(dir, "jarvis_"+version+"_linux_"+arch)
			checkStatic(t, path, machines[arch])
			if arch == runtime.GOARCH {
				checkVersion(t, path, version, commit)
			}
		})
	}
}

func checkStatic(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine || f.Type != elf.ET_EXEC {
		t.Errorf("%s is %v %v, want an executable for %v", path, f.Type, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: it is linked dynamically", path, p.Type)
		}
	}
}

func checkVersion(t *testing.T, path, version, commit string) {
	t.Helper()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out := run(t, path, args...)
		if want := "jarvis " + version + " (commit " + commit + ", built 20"; !strings.HasPrefix(out, want) {
			t.Errorf("jarvis %s = %q, want %q…", args[0], out, want)
		}
	}
}

// TestDeb: each .deb holds the binary, the unit and the example
// configuration as a conffile that only the jarvis user reads, and its
// unit passes systemd-analyze verify.
func TestDeb(t *testing.T) {
	dir, version, _ := dist(t)
	example, err := os.ReadFile("../../config/config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range arches {
		t.Run(arch, func(t *testing.T) {
			deb := filepath.Join(dir, "jarvis_"+version+"_"+arch+".deb")
			info := run(t, "dpkg-deb", "--info", deb)
			for _, want := range []string{"Package: jarvis", "Version: " + version, "Architecture: " + arch, "Depends: adduser", "postinst", "prerm", "conffiles"} {
				if !strings.Contains(info, want) {
					t.Errorf("dpkg-deb --info has no %q:\n%s", want, info)
				}
			}
			contents := run(t, "dpkg-deb", "--contents", deb)
			for _, want := range []string{"-rwxr-xr-x root/root", "./usr/bin/jarvis", "./usr/lib/systemd/system/jarvis.service",
				"-rw------- root/root", "./etc/jarvis/config.yaml", "./usr/share/doc/jarvis/config.example.yaml"} {
				if !strings.Contains(contents, want) {
					t.Errorf("dpkg-deb --contents has no %q:\n%s", want, contents)
				}
			}
			root := t.TempDir()
			run(t, "dpkg-deb", "--extract", deb, root)
			if conffiles := run(t, "dpkg-deb", "--info", deb, "conffiles"); strings.TrimSpace(conffiles) != "/etc/jarvis/config.yaml" {
				t.Errorf("conffiles = %q, want /etc/jarvis/config.yaml", conffiles)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "etc/jarvis/config.yaml")); !bytes.Equal(got, example) {
				t.Error("/etc/jarvis/config.yaml is not config/config.example.yaml")
			}
			bin, _ := os.ReadFile(filepath.Join(root, "usr/bin/jarvis"))
			want, _ := os.ReadFile(filepath.Join(dir, "jarvis_"+version+"_linux_"+arch))
			if !bytes.Equal(bin, want) {
				t.Error("/usr/bin/jarvis is not the release's binary")
			}
			checkUnit(t, root)
		})
	}
}

// checkUnit reads the unit as installed under root and has systemd check
// it.
func checkUnit(t *testing.T, root string) {
	t.Helper()
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/jarvis.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "WatchdogSec=", "Restart=on-failure", "RestartPreventExitStatus=2 6 64",
		"User=jarvis", "StateDirectory=jarvis", "ProtectSystem=strict", "NoNewPrivileges=yes",
		"ExecStart=/usr/bin/jarvis run --config /etc/jarvis/config.yaml"} {
		if !slices.Contains(strings.Split(string(unit), "\n"), want) && !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("the unit has no line %q", want)
		}
	}
	// verify checks that ExecStart's binary exists: the unit and the
	// binary go where the .deb puts them. The targets it is ordered
	// against are this machine's.
	targets, _ := filepath.Glob("/usr/lib/systemd/system/*.target")
	for _, target := range targets {
		data, err := os.ReadFile(target)
		if err == nil {
			err = os.WriteFile(filepath.Join(root, "usr/lib/systemd/system", filepath.Base(target)), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	verify := exec.Command("systemd-analyze", "verify", "--root", root, "/usr/lib/systemd/system/jarvis.service")
	if out, err := verify.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestImage: the image has both architectures, runs the binary as a user
// that is not root in /data, carries CA certificates and time-zone data,
// and its binary for this machine says its version.
func TestImage(t *testing.T) {
	dir, version, commit := dist(t)
	archive := filepath.Join(dir, "jarvis_"+version+"_oci.tar")
	oci := t.TempDir()
	untar(t, archive, oci)
	top, err := layout.ImageIndexFromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	named, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(named.Manifests) != 1 || named.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("the archive holds %+v, want one index named %s", named.Manifests, version)
	}
	index, err := top.ImageIndex(named.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range manifest.Manifests {
		platforms = append(platforms, desc.Platform.String())
		img, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(desc.Platform.Architecture, func(t *testing.T) {
			checkImage(t, img, desc.Platform, version, commit)
		})
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}
	if skopeo, err := exec.LookPath("skopeo"); err == nil {
		// A second reader of the archive, as a registry push would read it.
		out := run(t, skopeo, "inspect", "--override-arch", "amd64", "oci-archive:"+archive)
		if !strings.Contains(out, `"Architecture": "amd64"`) {
			t.Errorf("skopeo inspect:\n%s", out)
		}
	}
}

func checkImage(t *testing.T, img v1.Image, platform *v1.Platform, version, commit string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		t.Errorf("config is for %s/%s, the index says %s", cf.OS, cf.Architecture, platform)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/bin/jarvis"}) || !slices.Equal(c.Cmd, []string{"run", "--config", "/data/config.yaml"}) {
		t.Errorf("entrypoint %q, cmd %q, want /usr/bin/jarvis run --config /data/config.yaml", c.Entrypoint, c.Cmd)
	}
	if user, _, _ := strings.Cut(c.User, ":"); user == "" || user == "0" || user == "root" {
		t.Errorf("user %q: the image runs as root", c.User)
	}
	if c.WorkingDir != "/data" || c.Labels["org.opencontainers.image.version"] != version || c.Labels["org.opencontainers.image.revision"] != commit {
		t.Errorf("working dir %q, labels %v", c.WorkingDir, c.Labels)
	}
	files := map[string]*tar.Header{}
	var bin []byte
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		if h.Name == "usr/bin/jarvis" {
			bin, _ = io.ReadAll(tr)
		}
	}
	for _, name := range []string{"usr/bin/jarvis", "etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/Europe/Berlin", "etc/passwd"} {
		if files[name] == nil {
			t.Errorf("the image has no /%s", name)
		}
	}
	if h := files["data"]; h == nil || h.Uid == 0 || h.Mode&0o777 != 0o700 {
		t.Errorf("/data is %+v, want a directory only the image's user reaches", h)
	}
	if platform.Architecture == runtime.GOARCH {
		path := filepath.Join(t.TempDir(), "jarvis")
		if err := os.WriteFile(path, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		checkVersion(t, path, version, commit)
	}
}

func untar(t *testing.T, archive, to string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(to, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestSums: SHA256SUMS names every other file of dist/, each with its
// digest.
func TestSums(t *testing.T) {
	dir, _, _ := dist(t)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for line := range strings.Lines(string(sums)) {
		sum, name, _ := strings.Cut(strings.TrimSpace(line), "  ")
		listed[name] = sum
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if listed[e.Name()] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA256SUMS says %q, its digest is %x", e.Name(), listed[e.Name()], sum)
		}
		delete(listed, e.Name())
	}
	if len(listed) > 0 {
		t.Errorf("SHA256SUMS names files dist/ does not have: %v", listed)
	}
}
