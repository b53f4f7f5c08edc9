package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestNotebook(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Notebook()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			add := func(owner string, kind notebook.Kind, text string, due time.Time) int64 {
				t.Helper()
				at = at.Add(time.Minute)
				id, err := q.InsertEntry(ctx, notebook.Entry{Owner: owner, Kind: kind, Text: text, Due: due, CreatedAt: at})
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			rotate := add("@telegram_1:x", notebook.Note, "The staging DB password rotates monthly", time.Time{})
			add("@telegram_1:x", notebook.Note, "Lunch with Ana on Friday", time.Time{})
			add("@bob:x", notebook.Note, "the staging password is in the vault", time.Time{})
			add("@telegram_1:x", notebook.Idea, "let agents vote on priorities", time.Time{})
			undated := add("@telegram_1:x", notebook.Task, "tidy the wiki", time.Time{})
			dated := add("@telegram_1:x", notebook.Task, "renew the certificate", at.Add(48*time.Hour))

			found, err := q.SearchNotes(ctx, "@telegram_1:x", []string{"staging", "password"}, 10)
			if err != nil || len(found) != 1 || found[0].ID != rotate {
				t.Errorf("search staging password = %+v, %v; want only the own note", found, err)
			}
			if found, err := q.SearchNotes(ctx, "@telegram_1:x", []string{"ROTATES"}, 10); err != nil || len(found) != 1 {
				t.Errorf("search in another case = %+v, %v", found, err)
			}
			if found, err := q.SearchNotes(ctx, "@telegram_1:x", []string{`"or*`, "NEAR"}, 10); err != nil || len(found) != 0 {
				t.Errorf("a search of operators = %+v, %v", found, err)
			}
			tasks, err := q.Entries(ctx, "@telegram_1:x", notebook.Task, 10)
			if err != nil || len(tasks) != 2 || tasks[0].ID != dated || tasks[1].ID != undated || !tasks[1].Due.IsZero() {
				t.Errorf("tasks = %+v, %v; want the dated one first", tasks, err)
			}
			done, err := q.FinishTask(ctx, "@telegram_1:x", dated, at)
			if err != nil || !done.Done.Equal(at) {
				t.Errorf("finish = %+v, %v", done, err)
			}
			if _, err := q.FinishTask(ctx, "@telegram_1:x", dated, at); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("finishing twice: %v", err)
			}
			if _, err := q.FinishTask(ctx, "@bob:x", undated, at); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("Bob finishing another's task: %v", err)
			}
			if n, err := q.MoveEntries(ctx, "@telegram_1:x", "@alice:x"); err != nil || n != 5 {
				t.Errorf("moved %d, %v", n, err)
			}
			if found, err := q.SearchNotes(ctx, "@alice:x", []string{"staging"}, 10); err != nil || len(found) != 1 {
				t.Errorf("Alice's search after the move = %+v, %v", found, err)
			}
			if ideas, err := q.Entries(ctx, "@alice:x", notebook.Idea, 10); err != nil || len(ideas) != 1 {
				t.Errorf("ideas = %+v, %v", ideas, err)
			}
		})
	}
}
