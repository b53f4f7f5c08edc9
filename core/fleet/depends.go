package fleet

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// dependencies is what each configured agent depends on.
type dependencies struct {
	// order is every agent's upper-cased name, each after the agents it
	// depends on: the order in which a sweep announces silences, so that
	// a dependant finds the alert of what it depends on already raised.
	order []string
	// upstream lists, per upper-cased name, the agents it depends on
	// directly or through others, as configured, the most upstream first.
	upstream map[string][]string
	// needed holds the upper-cased names of the agents another depends on.
	needed map[string]bool
}

// direct lists what each agent depends on directly, upper-cased: its
// depends_on, and the orchestrator when one is configured and it is not
// the orchestrator itself.
func (c Config) direct() map[string][]string {
	orch := strings.ToUpper(c.Orchestrator)
	out := map[string][]string{}
	for _, a := range c.Agents {
		key := strings.ToUpper(a.Name)
		var on []string
		for _, d := range a.DependsOn {
			on = append(on, strings.ToUpper(d))
		}
		if orch != "" && key != orch && !slices.Contains(on, orch) {
			on = append(on, orch)
		}
		out[key] = on
	}
	return out
}

// validateDependencies checks fleet.orchestrator and every depends_on:
// each names a configured agent other than itself, the orchestrator
// depends on none, and no agent depends on itself through others. seen
// maps upper-cased names to their index.
func (c Config) validateDependencies(seen map[string]int) error {
	orch := strings.ToUpper(c.Orchestrator)
	if _, ok := seen[orch]; orch != "" && !ok {
		return core.Invalid("fleet.orchestrator", "no agent named %q", c.Orchestrator)
	}
	for i, a := range c.Agents {
		if strings.ToUpper(a.Name) == orch && len(a.DependsOn) > 0 {
			return core.Invalid(fmt.Sprintf("fleet.agents[%d].depends_on", i),
				"%s is fleet.orchestrator, which every other agent depends on: it depends on none", a.Name)
		}
		for j, d := range a.DependsOn {
			field := fmt.Sprintf("fleet.agents[%d].depends_on[%d]", i, j)
			if _, ok := seen[strings.ToUpper(d)]; !ok {
				return core.Invalid(field, "no agent named %q", d)
			}
			if strings.EqualFold(d, a.Name) {
				return core.Invalid(field, "%s cannot depend on itself", a.Name)
			}
		}
	}
	direct := c.direct()
	for i, a := range c.Agents {
		for j, d := range a.DependsOn {
			if path := pathTo(direct, strings.ToUpper(d), strings.ToUpper(a.Name), nil); path != nil {
				names := []string{a.Name}
				for _, k := range path {
					names = append(names, c.Agents[seen[k]].Name)
				}
				return core.Invalid(fmt.Sprintf("fleet.agents[%d].depends_on[%d]", i, j),
					"%q makes a cycle: %s", d, strings.Join(names, " → "))
			}
		}
	}
	return nil
}

// pathTo returns a path of dependencies from one agent to another
// (both included), or nil when there is none.
func pathTo(direct map[string][]string, from, to string, visited map[string]bool) []string {
	if from == to {
		return []string{to}
	}
	if visited == nil {
		visited = map[string]bool{}
	}
	if visited[from] {
		return nil
	}
	visited[from] = true
	for _, next := range direct[from] {
		if rest := pathTo(direct, next, to, visited); rest != nil {
			return append([]string{from}, rest...)
		}
	}
	return nil
}

// dependencies works out the sweep order and each agent's upstream from
// a validated config.
func (c Config) dependencies() dependencies {
	direct := c.direct()
	names := map[string]string{}
	for _, a := range c.Agents {
		names[strings.ToUpper(a.Name)] = a.Name
	}
	d := dependencies{upstream: map[string][]string{}, needed: map[string]bool{}}
	placed := map[string]bool{}
	var place func(key string)
	place = func(key string) {
		if placed[key] {
			return
		}
		placed[key] = true
		for _, on := range direct[key] {
			d.needed[on] = true
			place(on)
		}
		d.order = append(d.order, key)
	}
	for _, a := range c.Agents {
		place(strings.ToUpper(a.Name))
	}
	rank := map[string]int{}
	for i, key := range d.order {
		rank[key] = i
	}
	for _, key := range d.order {
		all := map[string]bool{}
		var walk func(k string)
		walk = func(k string) {
			for _, on := range direct[k] {
				if !all[on] {
					all[on] = true
					walk(on)
				}
			}
		}
		walk(key)
		up := make([]string, 0, len(all))
		for k := range all {
			up = append(up, k)
		}
		slices.SortFunc(up, func(a, b string) int { return rank[a] - rank[b] })
		for i, k := range up {
			up[i] = names[k]
		}
		d.upstream[key] = up
	}
	return d
}
