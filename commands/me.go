package commands

import "time"

// zone is the time zone of the sender.
func (p *Processor) zone(_ *Event) *time.Location {
	if p.cfg.Zone != nil {
		return p.cfg.Zone
	}
	return time.UTC
}
