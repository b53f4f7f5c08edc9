package bridge

import (
	"path"
	"slices"
	"strings"
)

// User is a Matrix user as the homeserver's user directory lists it.
type User struct {
	UserID      string
	DisplayName string
}

// Puppets returns which of users are the puppets of network that a handle
// on that network names: those whose display name is the handle (with or
// without its "@", in any case), or whose user ID has the handle where
// the network's pattern has its "*" (@telegram_* and 123 name
// @telegram_123:…). A handle with a pattern's characters names nobody.
// ok is false when no network has that name.
func (c Config) Puppets(network, handle string, users []User) (puppets []string, ok bool) {
	i := slices.IndexFunc(c.Networks, func(n Network) bool { return strings.EqualFold(n.Name, network) })
	if i < 0 {
		return nil, false
	}
	glob := c.Networks[i].Users
	handle = strings.TrimPrefix(strings.TrimSpace(handle), "@")
	if handle == "" || strings.ContainsAny(handle, `*?[\:`) {
		return nil, true // no handle, or one that would be a pattern
	}
	for _, u := range users {
		if match, _ := path.Match(glob, u.UserID); !match {
			continue
		}
		local, _, _ := strings.Cut(u.UserID, ":")
		named := strings.EqualFold(strings.TrimPrefix(strings.TrimSpace(u.DisplayName), "@"), handle)
		byID, _ := path.Match(strings.Replace(glob, "*", handle, 1), local)
		if (named || byID) && !slices.Contains(puppets, u.UserID) {
			puppets = append(puppets, u.UserID)
		}
	}
	return puppets, true
}
