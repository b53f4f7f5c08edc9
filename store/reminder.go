package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/reminder"
)

const (
	reminderColumns      = `id, owner, body, due_at, at_time, every_unit, zone, status, deliveries, created_at`
	insertReminderQuery  = `INSERT INTO reminder (owner, body, due_at, at_time, every_unit, zone, status, deliveries, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`
	getReminderQuery     = `SELECT ` + reminderColumns + ` FROM reminder WHERE id = $1`
	openRemindersQuery   = `SELECT ` + reminderColumns + ` FROM reminder WHERE owner = $1 AND status = 'waiting' ORDER BY due_at, id`
	dueRemindersQuery    = `SELECT ` + reminderColumns + ` FROM reminder WHERE status = 'waiting' AND due_at <= $1 ORDER BY due_at, id LIMIT $2`
	updateReminderQuery  = `UPDATE reminder SET due_at = $2, status = $3, deliveries = $4 WHERE id = $1`
	moveRemindersQuery   = `UPDATE reminder SET owner = $2 WHERE owner = $1`
	getTimeZoneQuery     = `SELECT time_zone FROM person WHERE user_id = $1`
	setTimeZoneQuery     = `INSERT INTO person (user_id, time_zone) VALUES ($1, $2) ON CONFLICT (user_id) DO UPDATE SET time_zone = excluded.time_zone`
	moveTimeZoneQuery    = `INSERT INTO person (user_id, time_zone, quiet_from, quiet_to, digest_at) SELECT $2, time_zone, quiet_from, quiet_to, digest_at FROM person WHERE user_id = $1 ON CONFLICT (user_id) DO NOTHING`
	deletePersonTZQuery  = `DELETE FROM person WHERE user_id = $1`
	reminderNotFoundWhat = "reminder"
)

// ReminderQuery keeps people's reminders and time zones.
type ReminderQuery struct {
	db *dbutil.Database
}

var _ reminder.Store = (*ReminderQuery)(nil)

// Reminders returns the reminder queries.
func (s *Store) Reminders() *ReminderQuery { return &ReminderQuery{db: s.DB} }

// InsertReminder writes a new reminder and returns its ID.
func (q *ReminderQuery) InsertReminder(ctx context.Context, r reminder.Reminder) (int64, error) {
	var id int64
	err := q.db.QueryRow(ctx, insertReminderQuery, r.Owner, r.Text, r.Due.UnixMilli(), r.At.UnixMilli(), string(r.Every), r.Zone,
		string(r.Status), r.Deliveries, r.CreatedAt.UnixMilli()).Scan(&id)
	return id, err
}

// Reminder returns one reminder.
func (q *ReminderQuery) Reminder(ctx context.Context, id int64) (reminder.Reminder, error) {
	r, err := scanReminder(q.db.QueryRow(ctx, getReminderQuery, id))
	return r, notFound(err, fmt.Sprintf("%s %d", reminderNotFoundWhat, id))
}

// OpenReminders returns an owner's waiting reminders, soonest first.
func (q *ReminderQuery) OpenReminders(ctx context.Context, owner string) ([]reminder.Reminder, error) {
	return q.list(ctx, openRemindersQuery, owner)
}

// DueReminders returns up to limit waiting reminders due by now.
func (q *ReminderQuery) DueReminders(ctx context.Context, now time.Time, limit int) ([]reminder.Reminder, error) {
	return q.list(ctx, dueRemindersQuery, now.UnixMilli(), limit)
}

func (q *ReminderQuery) list(ctx context.Context, query string, args ...any) ([]reminder.Reminder, error) {
	rows, err := q.db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reminder.Reminder
	for rows.Next() {
		r, err := scanReminder(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func scanReminder(row interface{ Scan(...any) error }) (reminder.Reminder, error) {
	var r reminder.Reminder
	var due, at, created int64
	var every, status string
	err := row.Scan(&r.ID, &r.Owner, &r.Text, &due, &at, &every, &r.Zone, &status, &r.Deliveries, &created)
	r.Due, r.At, r.CreatedAt = time.UnixMilli(due), time.UnixMilli(at), time.UnixMilli(created)
	r.Every, r.Status = reminder.Repeat(every), reminder.Status(status)
	return r, err
}

// UpdateReminder writes a reminder's due time, status and deliveries.
func (q *ReminderQuery) UpdateReminder(ctx context.Context, r reminder.Reminder) error {
	res, err := q.db.Exec(ctx, updateReminderQuery, r.ID, r.Due.UnixMilli(), string(r.Status), r.Deliveries)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s %d: %w", reminderNotFoundWhat, r.ID, core.ErrNotFound)
	}
	return nil
}

// MoveReminders gives every reminder of from to to, and from's time zone,
// quiet hours and daily digest too when to has set none.
func (q *ReminderQuery) MoveReminders(ctx context.Context, from, to string) (int, error) {
	res, err := q.db.Exec(ctx, moveRemindersQuery, from, to)
	if err != nil {
		return 0, fmt.Errorf("move the reminders of %s: %w", from, err)
	}
	if _, err := q.db.Exec(ctx, moveTimeZoneQuery, from, to); err != nil {
		return 0, fmt.Errorf("move the time zone of %s: %w", from, err)
	}
	if _, err := q.db.Exec(ctx, deletePersonTZQuery, from); err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// TimeZone returns the time zone a person set, "" when none.
func (q *ReminderQuery) TimeZone(ctx context.Context, user string) (string, error) {
	var zone string
	err := q.db.QueryRow(ctx, getTimeZoneQuery, user).Scan(&zone)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return zone, err
}

// SetTimeZone records a person's time zone.
func (q *ReminderQuery) SetTimeZone(ctx context.Context, user, zone string) error {
	_, err := q.db.Exec(ctx, setTimeZoneQuery, user, zone)
	return err
}
