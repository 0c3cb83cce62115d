package app

import (
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

const (
	joinWaitlistQ = `mutation($show: ID!, $n: Int!, $types: [TicketType!]) { joinWaitingList(showtimeId: $show, seats: $n, ticketTypes: $types) { id status position waiting seats ticketTypes showtime { id } } }`
	myWaitlistQ   = `{ myWaitingListEntries { id status position offer { orderId expiresAt order { status amountCents } seats { id } } } }`
	waitlistRepQ  = `query($show: ID!) { waitingListReport(showtimeId: $show) { entries waiting offered accepted seatsSold } }`
)

type waitlistEntryOut struct {
	ID, Status string
	Position   *int
	Offer      *struct {
		OrderID, ExpiresAt string
		Order              struct {
			Status      string
			AmountCents int
		}
		Seats []struct{ ID string }
	}
}

// TestWaitingListAPI runs the waiting list through the API on MySQL and Redis.
func TestWaitingListAPI(t *testing.T) { waitingListThroughAPI(t, newTestApp(t)) }

// TestWaitingListOnEmbeddedStores runs it on SQLite and the in-process Redis.
func TestWaitingListOnEmbeddedStores(t *testing.T) { waitingListThroughAPI(t, startEmbeddedTestApp(t)) }

// waitingListThroughAPI: the refusals' codes, a join, an offer made by the instance's own
// offerer when a hold is cancelled, the offer paid, and the reports.
func waitingListThroughAPI(t *testing.T, a *testApp) {
	show := a.createShowtime(a.createMovie("Dune", 155), a.createHall("Hall 1", 1, 4), testNow.Add(30*time.Hour))
	seats := a.openSales(show)
	ann, bob, cat := a.token("ann", "customer"), a.token("bob", "customer"), a.token("cat", "customer")
	join := func(tok string, n int) map[string]any { return map[string]any{"show": show, "n": n} }

	a.wantCode(ann, joinWaitlistQ, join(ann, 2), "NOT_SOLD_OUT")
	bobs := a.hold(bob, show, seats[:2], "b")
	a.hold(cat, show, seats[2:], "c")
	a.wantCode("", joinWaitlistQ, join("", 2), "UNAUTHENTICATED")
	a.wantCode(ann, joinWaitlistQ, join(ann, 0), "BAD_USER_INPUT")
	a.wantCode(ann, joinWaitlistQ, join(ann, 7), "PURCHASE_LIMIT_EXCEEDED")
	a.wantCode(ann, joinWaitlistQ, map[string]any{"show": nodeid.Encode(nodeid.Showtime, 1<<30), "n": 1}, "NOT_FOUND")
	a.wantCode(ann, joinWaitlistQ, map[string]any{"show": show, "n": 2, "types": []string{"ADULT"}}, "BAD_USER_INPUT")
	a.wantCode(ann, joinWaitlistQ, map[string]any{"show": show, "n": 1, "types": []string{"CHILD"}}, "BAD_USER_INPUT") // not sold here

	var joined struct {
		JoinWaitingList struct {
			ID, Status      string
			Position, Seats int
			TicketTypes     []string
		}
	}
	a.must(ann, joinWaitlistQ, map[string]any{"show": show, "n": 2, "types": []string{"ADULT", "ADULT"}}, &joined)
	entry := joined.JoinWaitingList
	if entry.Status != "WAITING" || entry.Position != 1 || entry.Seats != 2 || len(entry.TicketTypes) != 2 {
		t.Fatalf("joined %+v", entry)
	}
	a.wantCode(ann, joinWaitlistQ, join(ann, 1), "ALREADY_ON_WAITING_LIST")
	a.wantCode(bob, `mutation($id: ID!) { leaveWaitingList(entryId: $id) { status } }`, map[string]any{"id": entry.ID}, "NOT_FOUND")
	a.wantCode(ann, waitlistRepQ, map[string]any{"show": show}, "FORBIDDEN")
	var node struct{ Node *struct{ ID string } }
	a.must(bob, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": entry.ID}, &node)
	if node.Node != nil {
		t.Fatal("bob sees ann's entry through node(id:)")
	}
	a.must(ann, `query($id: ID!) { node(id: $id) { id ... on WaitingListEntry { status } } }`, map[string]any{"id": entry.ID}, &node)
	if node.Node == nil || node.Node.ID != entry.ID {
		t.Fatalf("ann's node(id:) of her entry: %+v", node.Node)
	}

	// bob cancels: the instance's offerer offers his two seats to ann.
	a.must(bob, `mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`, map[string]any{"id": bobs.ID}, nil)
	var mine struct{ MyWaitingListEntries []waitlistEntryOut }
	deadline := time.Now().Add(5 * time.Second)
	for {
		a.must(ann, myWaitlistQ, nil, &mine)
		if len(mine.MyWaitingListEntries) == 1 && mine.MyWaitingListEntries[0].Status == "OFFERED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no offer within 5 s: %+v", mine)
		}
		time.Sleep(50 * time.Millisecond)
	}
	offer := mine.MyWaitingListEntries[0].Offer
	if offer == nil || offer.Order.Status != "PENDING_PAYMENT" || len(offer.Seats) != 2 || mine.MyWaitingListEntries[0].Position != nil {
		t.Fatalf("the offer: %+v", mine.MyWaitingListEntries[0])
	}
	a.must(ann, payQ, map[string]any{"id": offer.OrderID, "ref": "ref-offer"}, nil)
	a.must(ann, myWaitlistQ, nil, &mine)
	if got := mine.MyWaitingListEntries[0].Status; got != "ACCEPTED" {
		t.Fatalf("after paying: %s, want ACCEPTED", got)
	}
	var rep struct {
		WaitingListReport struct{ Entries, Waiting, Offered, Accepted, SeatsSold int }
	}
	a.must(a.admin, waitlistRepQ, map[string]any{"show": show}, &rep)
	if r := rep.WaitingListReport; r.Entries != 1 || r.Offered != 1 || r.Accepted != 1 || r.SeatsSold != 2 || r.Waiting != 0 {
		t.Fatalf("report %+v", r)
	}
	var sales struct {
		ShowtimeSales struct{ Sold, SoldThroughWaitingList int }
	}
	a.must(a.admin, `query($show: ID!) { showtimeSales(showtimeId: $show) { sold soldThroughWaitingList } }`, map[string]any{"show": show}, &sales)
	if s := sales.ShowtimeSales; s.Sold != 2 || s.SoldThroughWaitingList != 2 {
		t.Fatalf("sales %+v, want 2 sold, both through the waiting list", s)
	}
}
