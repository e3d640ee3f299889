package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/internal/e2e/plainapi"
	idem "github.com/idemgen/idemgen/runtime"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/mysqlstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/pgstore/pgtest"
)

// stepShop is the shop of TestStepsResumeAfterKill: createOrder runs two
// journaled steps, reserve and charge, each saying on stdout that it ran;
// on PostgreSQL each also writes a row of its own in the step's
// transaction (on MariaDB likewise). It stalls (says so, and waits to be killed) at stall:
// "between" the steps or "after" the last one.
type stepShop struct {
	plainapi.Unimplemented
	table string // PostgreSQL, MariaDB: the table of the steps' rows; "" on Redis
	stall string
}

func newStepShop(_ context.Context, table, stall string, _ idemstore.Store) *stepShop {
	return &stepShop{table: table, stall: stall}
}

// step is the step name of order item: it says it ran, and writes its row.
func (s *stepShop) step(item, name string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if tx := mysqlstore.Tx(ctx); tx != nil && s.table != "" { // MariaDB
			if _, err := tx.ExecContext(ctx, "INSERT INTO `"+s.table+"` (item, step) VALUES (?, ?)", item, name); err != nil {
				return "", err
			}
		} else if s.table != "" {
			tx := pgstore.Tx(ctx)
			if _, err := tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{s.table}.Sanitize()+" (item, step) VALUES ($1, $2)", item, name); err != nil {
				return "", err
			}
		}
		fmt.Println("ran", name, item)
		return name + "-" + item, nil
	}
}

// CreateOrder reserves and charges the order, each in a step.
func (s *stepShop) CreateOrder(w http.ResponseWriter, r *http.Request, _ plainapi.CreateOrderParams) {
	ctx := r.Context()
	var o plainapi.NewOrder
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var results []string
	for _, name := range []string{"reserve", "charge"} {
		v, err := idem.Step(ctx, name, s.step(o.Item, name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		results = append(results, v)
		if (name == "reserve" && s.stall == "between") || (name == "charge" && s.stall == "after") {
			fmt.Println("stalled", o.Item)
			<-ctx.Done() // killed meanwhile
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(plainapi.Order{Id: strings.Join(results, ","), Item: o.Item, Quantity: o.Quantity})
}

// TestStepsResumeAfterKill: the shop process is killed with SIGKILL
// between the two steps of every order, or after the last; the retries
// succeed on a second shop process, which runs only the steps not
// journaled: every step ran once per order, counted from both processes'
// output and, on PostgreSQL and MariaDB, from the rows the steps committed.
// On Redis Cluster (three masters) each journal is also found in its
// record's hash slot, the records spread over the masters.
func TestStepsResumeAfterKill(t *testing.T) {
	for _, store := range []string{"redis", "postgres", "cluster", "mariadb"} {
		for _, stall := range []string{"between", "after"} {
			t.Run(store+"/"+stall, func(t *testing.T) {
				t.Parallel()
				const orders = 5
				space, _ := shopSpace(t, store)
				rows := ""
				if store == "postgres" {
					pool := pgtest.Pool(t, 0)
					rows = pgtest.Name(t) + "_rows"
					pgtest.Exec(t, pool, "CREATE TABLE "+rows+" (item text NOT NULL, step text NOT NULL)")
					t.Cleanup(func() { pgtest.Drop(t, pool, rows) })
					defer func() {
						for i := 1; i <= orders; i++ {
							for _, step := range []string{"reserve", "charge"} {
								if n := pgtest.Count(t, pool, rows, "item = $1 AND step = $2", fmt.Sprint("order-", i), step); n != 1 {
									t.Errorf("order-%d: %d rows of step %s committed, want 1", i, n, step)
								}
							}
						}
					}()
				}
				if store == "mariadb" {
					rows = mariadbStepRows(t, orders)
				}
				addr := freeAddr(t)
				env := []string{envShop + "=steps", envShopAddr + "=" + addr, envShopStore + "=" + store,
					envShopSpace + "=" + space, envShopUpright + "=" + rows}

				first := startShop(t, append(env, envShopStall+"="+stall)...)
				done := placeOrders(t, addr, orders)
				for range orders {
					first.await(t, "stalled ")
				}
				first.kill(t)
				second := startShop(t, env...)
				for range orders {
					if msg := <-done; msg != "" {
						t.Error(msg)
					}
				}

				ran, byProcess := map[string]int{}, [2]int{}
				for i, p := range []*shopProcess{first, second} {
					for _, line := range p.output(t) {
						if rest, ok := strings.CutPrefix(line, "ran "); ok {
							ran[rest]++
							byProcess[i]++
						}
					}
				}
				for i := 1; i <= orders; i++ {
					for _, step := range []string{"reserve", "charge"} {
						if n := ran[fmt.Sprintf("%s order-%d", step, i)]; n != 1 {
							t.Errorf("order-%d: step %s ran %d times, want 1", i, step, n)
						}
					}
				}
				t.Logf("steps run: %d by the killed process, %d by the second, of %d", byProcess[0], byProcess[1], 2*orders)
				if store == "cluster" {
					records, journals := clusterSpread(t, space)
					if records != orders || journals != orders {
						t.Errorf("cluster: %d records and %d journals, want %d of each", records, journals, orders)
					}
				}
			})
		}
	}
}
