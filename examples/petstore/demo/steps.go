package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemgen/idemgen/examples/petstore/api/client"
	idem "github.com/idemgen/idemgen/runtime"
)

func (d *demo) firstCall(ctx context.Context) error {
	var res idem.CallResult
	resp, err := d.client.CreatePet(ctx, petclient.NewPet{Name: "Rex", Species: "dog"}, idem.WithResult(&res))
	if err != nil {
		return err
	}
	if resp.JSON201 == nil {
		return fmt.Errorf("%w: status %d", errUnexpected, resp.StatusCode())
	}
	d.say("client: POST /pets with key %s -> %d, pet #%d, after %d attempt(s)", res.Key, resp.StatusCode(), resp.JSON201.Id, res.Attempts)
	return d.expectRuns("createPet", 1)
}

func (d *demo) lostResponse(ctx context.Context) error {
	d.lossy.loseNext.Store(true)
	var res idem.CallResult
	resp, err := d.lossyC.CreatePet(ctx, petclient.NewPet{Name: "Tom", Species: "cat"}, idem.WithResult(&res))
	if err != nil {
		return err
	}
	if resp.JSON201 == nil || !res.Replayed || res.Attempts != 2 {
		return fmt.Errorf("%w: status %d, replayed %v, attempts %d", errUnexpected, resp.StatusCode(), res.Replayed, res.Attempts)
	}
	d.say("client: attempt 1 ran on the server but its answer was lost (connection reset)")
	d.say("client: attempt 2 with the same key %s -> %d, Idempotent-Replayed: %s, pet #%d",
		res.Key, resp.StatusCode(), resp.HTTPResponse.Header.Get("Idempotent-Replayed"), resp.JSON201.Id)
	return d.expectRuns("createPet", 2)
}

func (d *demo) concurrentDuplicate(ctx context.Context) error {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	d.hold.Store(g)
	defer d.hold.Store(nil)

	const key = "demo-concurrent-0001"
	body := petclient.NewPet{Name: "Polly", Species: "parrot"}
	first := make(chan error, 1)
	go func() {
		resp, _, err := d.raw(ctx, http.MethodPost, "/pets", key, body)
		if err == nil && resp.StatusCode != http.StatusCreated {
			err = fmt.Errorf("%w: original answered %d", errUnexpected, resp.StatusCode)
		}
		first <- err
	}()
	select {
	case <-g.entered:
	case <-ctx.Done():
		return ctx.Err()
	}
	d.say("client A: POST /pets with key %s is running on the server (held open)", key)

	resp, data, err := d.raw(ctx, http.MethodPost, "/pets", key, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("%w: duplicate answered %d", errUnexpected, resp.StatusCode)
	}
	d.say("client B: same key meanwhile -> %d, Retry-After: %s, code %q", resp.StatusCode, resp.Header.Get("Retry-After"), problemCode(data))

	close(g.release)
	if err := <-first; err != nil {
		return err
	}
	d.say("client A: the original finishes -> 201")

	var res idem.CallResult
	again, err := d.client.CreatePet(ctx, body, idem.WithKey(key), idem.WithResult(&res))
	if err != nil {
		return err
	}
	if !res.Replayed || again.JSON201 == nil {
		return fmt.Errorf("%w: retry answered %d, replayed %v", errUnexpected, again.StatusCode(), res.Replayed)
	}
	d.say("client B: retries with the same key -> %d, replayed, pet #%d", again.StatusCode(), again.JSON201.Id)
	return d.expectRuns("createPet", 3)
}

func (d *demo) reusedKey(ctx context.Context) error {
	const key = "demo-concurrent-0001"
	resp, data, err := d.raw(ctx, http.MethodPost, "/pets", key, petclient.NewPet{Name: "Nemo", Species: "fish"})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusUnprocessableEntity {
		return fmt.Errorf("%w: reused key answered %d", errUnexpected, resp.StatusCode)
	}
	d.say("client: key %s with another pet -> %d, code %q; the stored result is untouched", key, resp.StatusCode, problemCode(data))

	var res idem.CallResult
	_, err = d.client.CreatePet(ctx, petclient.NewPet{Name: "Nemo", Species: "fish"}, idem.WithKey(key), idem.WithResult(&res))
	var problem *idem.ProblemError
	if !errors.As(err, &problem) {
		return fmt.Errorf("%w: the client helper's reused key gave %v, not a problem", errUnexpected, err)
	}
	d.say("client helper: the same mistake -> %d %s after %d attempt (422 is never retried)", res.Status, problem.Problem.Code, res.Attempts)
	return d.expectRuns("createPet", 3)
}

func (d *demo) bodyKey(ctx context.Context) error {
	var res idem.CallResult
	body := petclient.PaymentRequest{Amount: 4200, Currency: "EUR"}
	resp, err := d.client.CreatePayment(ctx, body, idem.WithResult(&res))
	if err != nil {
		return err
	}
	if resp.JSON201 == nil {
		return fmt.Errorf("%w: payment answered %d", errUnexpected, resp.StatusCode())
	}
	d.say("client: POST /payments, the helper filled idempotency_key=%s into the body -> %d, payment #%d", res.Key, resp.StatusCode(), resp.JSON201.Id)

	d.lossy.loseNext.Store(true)
	key := res.Key
	body.IdempotencyKey = &key
	again, err := d.lossyC.CreatePayment(ctx, body, idem.WithResult(&res))
	if err != nil {
		return err
	}
	d.say("client: the same payment sent again with that key (first answer lost) -> %d, replayed %v, payment #%d",
		again.StatusCode(), res.Replayed, again.JSON201.Id)
	return d.expectRuns("createPayment", 1)
}

func (d *demo) outage(ctx context.Context) error {
	if d.mr == nil {
		d.say("skipped on a real Redis: the demo only stops its own in-process Redis (the tests stop a real one)")
		return nil
	}
	d.mr.Close()
	resp, data, err := d.raw(ctx, http.MethodPost, "/pets", "demo-outage-0001", petclient.NewPet{Name: "Bubbles", Species: "fish"})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		return fmt.Errorf("%w: with Redis down the server answered %d", errUnexpected, resp.StatusCode)
	}
	d.say("Redis stopped: POST /pets -> %d, Retry-After: %s, code %q (fail closed: the handler did not run)",
		resp.StatusCode, resp.Header.Get("Retry-After"), problemCode(data))
	if err := d.expectRuns("createPet", 3); err != nil {
		return err
	}
	if err := d.mr.Restart(); err != nil {
		return fmt.Errorf("restart in-process redis: %w", err)
	}
	var res idem.CallResult
	again, err := d.client.CreatePet(ctx, petclient.NewPet{Name: "Bubbles", Species: "fish"}, idem.WithKey("demo-outage-0001"), idem.WithResult(&res))
	if err != nil {
		return err
	}
	d.say("Redis back: the same request -> %d, nothing restarted on the server", again.StatusCode())
	return d.expectRuns("createPet", 4)
}

func (d *demo) otherCaller(ctx context.Context) error {
	const key = "demo-concurrent-0001" // step 3's key, with step 3's pet
	runs := d.shop.Runs("createPet")
	var res idem.CallResult
	resp, err := d.otherC.CreatePet(ctx, petclient.NewPet{Name: "Polly", Species: "parrot"}, idem.WithKey(key), idem.WithResult(&res))
	if err != nil {
		return err
	}
	if resp.JSON201 == nil || res.Replayed {
		return fmt.Errorf("%w: another caller answered %d, replayed %v", errUnexpected, resp.StatusCode(), res.Replayed)
	}
	d.say("client of another API key: POST /pets with key %s -> %d, not a replay of step 3's pet: pet #%d", key, resp.StatusCode(), resp.JSON201.Id)
	mine, err := d.client.CreatePet(ctx, petclient.NewPet{Name: "Polly", Species: "parrot"}, idem.WithKey(key), idem.WithResult(&res))
	if err != nil {
		return err
	}
	if mine.JSON201 == nil || !res.Replayed || mine.JSON201.Id == resp.JSON201.Id {
		return fmt.Errorf("%w: the first caller's retry answered %d, replayed %v", errUnexpected, mine.StatusCode(), res.Replayed)
	}
	d.say("client: the first caller's retry with that key -> %d, replayed, still its own pet #%d", mine.StatusCode(), mine.JSON201.Id)
	return d.expectRuns("createPet", runs+1)
}

// problemCode returns the code member of an RFC 9457 problem body.
func problemCode(data []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return "(not a problem document)"
	}
	return p.Code
}
