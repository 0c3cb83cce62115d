package passkit

import (
	"context"
	"slices"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/passregistration"
	"seatflow/ent/predicate"
	"seatflow/ent/showtime"
	"seatflow/ent/ticket"
	"seatflow/internal/database"
	"seatflow/internal/wallet"
)

// passTags are the update tags (Tag of LastUpdated) of the passes of ticketIDs; a ticket
// that does not exist has none.
func (s *Service) passTags(ctx context.Context, ticketIDs []int) (map[int]int64, error) {
	ts, err := s.DB.Ticket.Query().Where(ticket.IDIn(ticketIDs...)).
		Select(ticket.FieldShowtimeID, ticket.FieldCreatedAt, ticket.FieldRevokedAt).All(ctx)
	if err != nil {
		return nil, err
	}
	showIDs := make([]int, 0, len(ts))
	for _, t := range ts {
		showIDs = append(showIDs, t.ShowtimeID)
	}
	slices.Sort(showIDs)
	shows, err := s.DB.Showtime.Query().Where(showtime.IDIn(slices.Compact(showIDs)...)).
		Select(showtime.FieldUpdatedAt).All(ctx)
	if err != nil {
		return nil, err
	}
	updated := make(map[int]*ent.Showtime, len(shows))
	for _, st := range shows {
		updated[st.ID] = st
	}
	tags := make(map[int]int64, len(ts))
	for _, t := range ts {
		if st := updated[t.ShowtimeID]; st != nil {
			tags[t.ID] = Tag(wallet.LastUpdatedAt(st.UpdatedAt, t.CreatedAt, t.RevokedAt))
		}
	}
	return tags, nil
}

// register registers device for the pass (passType, serial) of ticketID with pushToken:
// created is false when it was registered already (its push token is then replaced).
// The pass's current tag counts as pushed: the device has just fetched the pass.
func (s *Service) register(ctx context.Context, device, passType, serial string, ticketID int, pushToken string) (created bool, err error) {
	tags, err := s.passTags(ctx, []int{ticketID})
	if err != nil {
		return false, err
	}
	tag, ok := tags[ticketID]
	if !ok {
		return false, errNoPass
	}
	others, err := s.DB.PassRegistration.Query().Where(passregistration.TicketID(ticketID),
		passregistration.Not(is(device, passType, serial))).Count(ctx)
	if err != nil {
		return false, err
	}
	if others >= seatflow.MaxPassDevices {
		return false, errTooManyDevices
	}
	err = s.DB.PassRegistration.Create().SetDeviceLibraryID(device).SetPassTypeID(passType).SetSerialNumber(serial).
		SetTicketID(ticketID).SetPushToken(pushToken).SetCreatedAt(s.Now()).SetPushedTag(tag).Exec(ctx)
	if err == nil {
		return true, nil
	}
	if !database.Conflict(err) {
		return false, err
	}
	// Registered already (two registrations at once: the second lands here too).
	return false, s.DB.PassRegistration.Update().Where(is(device, passType, serial)).SetPushToken(pushToken).Exec(ctx)
}

// unregister forgets device's registration for the pass (passType, serial), if any.
func (s *Service) unregister(ctx context.Context, device, passType, serial string) error {
	_, err := s.DB.PassRegistration.Delete().Where(is(device, passType, serial)).Exec(ctx)
	return err
}

// updatedSerials are the serial numbers of device's passes of passType updated after tag
// since (all of them when !hasSince), and the latest tag of its passes (0 when it has none).
func (s *Service) updatedSerials(ctx context.Context, device, passType string, since int64, hasSince bool) ([]string, int64, error) {
	regs, err := s.DB.PassRegistration.Query().
		Where(passregistration.DeviceLibraryID(device), passregistration.PassTypeID(passType)).
		Order(ent.Asc(passregistration.FieldID)).Limit(maxPassesPerDevice).
		Select(passregistration.FieldSerialNumber, passregistration.FieldTicketID).All(ctx)
	if err != nil || len(regs) == 0 {
		return nil, 0, err
	}
	ids := make([]int, len(regs))
	for i, r := range regs {
		ids[i] = r.TicketID
	}
	tags, err := s.passTags(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	var serials []string
	var last int64
	for _, r := range regs {
		tag, ok := tags[r.TicketID]
		if !ok {
			continue
		}
		last = max(last, tag)
		if !hasSince || tag > since {
			serials = append(serials, r.SerialNumber)
		}
	}
	return serials, last, nil
}

// maxPassesPerDevice bounds the passes of one pass type one device's list reads.
const maxPassesPerDevice = 1000

// is picks the registration of device for the pass (passType, serial).
func is(device, passType, serial string) predicate.PassRegistration {
	return passregistration.And(passregistration.DeviceLibraryID(device), passregistration.PassTypeID(passType),
		passregistration.SerialNumber(serial))
}
