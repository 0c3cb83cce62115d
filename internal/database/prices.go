package database

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"seatflow"
)

// migrateBatch is how many showtimes or orders one step of the price migration rewrites.
const migrateBatch = 500

// adultPrices rewrites the prices of showtimes from before ticket types, an object of
// prices by seat kind ({"STANDARD": 1200}), as the list of those prices for ADULT tickets.
// seatflow.PriceList reads both forms, so a showtime is never unreadable meanwhile; after
// this every row holds the list. Idempotent: a list is left as it is.
func adultPrices(ctx context.Context, db *sql.DB) error {
	for {
		rows, err := db.QueryContext(ctx, "SELECT id, prices FROM showtimes WHERE prices LIKE '{%' ORDER BY id LIMIT ?", migrateBatch)
		if err != nil {
			return fmt.Errorf("migrate: read prices: %w", err)
		}
		type row struct {
			id     int
			prices string
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.prices); err != nil {
				rows.Close()
				return fmt.Errorf("migrate: read prices: %w", err)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("migrate: read prices: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			var list seatflow.PriceList
			if err := json.Unmarshal([]byte(r.prices), &list); err != nil {
				return fmt.Errorf("migrate: prices of showtime %d: %w", r.id, err)
			}
			b, err := json.Marshal(list)
			if err != nil {
				return err
			}
			if _, err := db.ExecContext(ctx, "UPDATE showtimes SET prices = ? WHERE id = ?", string(b), r.id); err != nil {
				return fmt.Errorf("migrate: prices of showtime %d: %w", r.id, err)
			}
		}
	}
}

// lineAmounts gives the lines of orders from before ticket types (order_seats rows with no
// amount; their ticket type is ADULT, the column's default) their amounts: each seat's
// ADULT price at its showtime when those add up to the order's amount, otherwise (the
// prices changed since the hold) the order's amount split evenly over its seats, the cents
// left over going to the first seats. Either way an order's lines add up to its amount.
// Runs after adultPrices. Idempotent: lines with an amount are left as they are.
func lineAmounts(ctx context.Context, db *sql.DB) error {
	for {
		ids, err := ordersWithoutLineAmounts(ctx, db)
		if err != nil || len(ids) == 0 {
			return err
		}
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		rows, err := db.QueryContext(ctx, `SELECT l.id, l.order_id, o.amount_cents, st.prices, s.kind
			FROM order_seats l JOIN orders o ON o.id = l.order_id JOIN showtimes st ON st.id = o.showtime_id
			JOIN seats s ON s.id = l.seat_id
			WHERE l.order_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) ORDER BY l.order_id, l.seat_id`, args...)
		if err != nil {
			return fmt.Errorf("migrate: read order lines: %w", err)
		}
		type line struct {
			id, price int
			priced    bool
		}
		type orderLines struct {
			amount int
			lines  []line
		}
		byOrder := map[int]*orderLines{}
		for rows.Next() {
			var id, orderID, amount int
			var prices, kind string
			if err := rows.Scan(&id, &orderID, &amount, &prices, &kind); err != nil {
				rows.Close()
				return fmt.Errorf("migrate: read order lines: %w", err)
			}
			var list seatflow.PriceList
			if err := json.Unmarshal([]byte(prices), &list); err != nil {
				rows.Close()
				return fmt.Errorf("migrate: prices of order %d: %w", orderID, err)
			}
			o := byOrder[orderID]
			if o == nil {
				o = &orderLines{amount: amount}
				byOrder[orderID] = o
			}
			price, ok := seatflow.PriceOf(list, seatflow.SeatKind(kind), seatflow.TicketAdult)
			o.lines = append(o.lines, line{id: id, price: price, priced: ok})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("migrate: read order lines: %w", err)
		}
		for _, o := range byOrder {
			sum, priced := 0, true
			for _, l := range o.lines {
				sum += l.price
				priced = priced && l.priced
			}
			for i, l := range o.lines {
				amount := l.price
				if !priced || sum != o.amount {
					n := len(o.lines)
					amount = o.amount / n
					if i < o.amount%n {
						amount++
					}
				}
				if _, err := db.ExecContext(ctx, "UPDATE order_seats SET amount_cents = ? WHERE id = ?", amount, l.id); err != nil {
					return fmt.Errorf("migrate: order line %d: %w", l.id, err)
				}
			}
		}
	}
}

func ordersWithoutLineAmounts(ctx context.Context, db *sql.DB) ([]int, error) {
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT order_id FROM order_seats WHERE amount_cents IS NULL ORDER BY order_id LIMIT ?", migrateBatch)
	if err != nil {
		return nil, fmt.Errorf("migrate: order lines without amounts: %w", err)
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("migrate: order lines without amounts: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
