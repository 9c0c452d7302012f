package takeover

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// UserCard and groupCard are the console's cards (spec §7.3).
type UserCard struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	FromGroup bool   `json:"from_group"`
	GroupID   string `json:"group_id"`
	BotUUID   string `json:"bot_uuid"`
	BotName   string `json:"bot_name"`
	Adapter   string `json:"adapter"`
}

type groupCard struct {
	Type        string       `json:"type"`
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	MemberCount int          `json:"member_count"`
	Members     []memberView `json:"members"`
	BotUUID     string       `json:"bot_uuid"`
	BotName     string       `json:"bot_name"`
	Adapter     string       `json:"adapter"`
}

func (o *ops) userInfo(ctx context.Context, c pageCall, req PageRequest) (UserCard, error) {
	rec, err := o.mustRecord(ctx, c.Scope, req.SID)
	if err != nil {
		return UserCard{}, err
	}
	bot := o.bots.get(ctx, c.Scope, c.Binding, rec.BotUUID)
	card := UserCard{Type: "user", BotUUID: rec.BotUUID, BotName: bot.name, Adapter: rec.Adapter}
	if rec.Type == model.LauncherGroup && req.MemberID != "" {
		i := slices.IndexFunc(rec.Members, func(m model.Member) bool { return m.ID == req.MemberID })
		if i < 0 {
			return UserCard{}, wire.Errorf(wire.ErrNotFound, "no such member")
		}
		card.ID, card.Name, card.FromGroup, card.GroupID = rec.Members[i].ID, rec.Members[i].Name, true, rec.TargetID
		return card, nil
	}
	card.ID, card.Name = rec.TargetID, rec.Name
	return card, nil
}

func (o *ops) groupInfo(ctx context.Context, c pageCall, sid string) (groupCard, error) {
	rec, err := o.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return groupCard{}, err
	}
	if rec.Type != model.LauncherGroup {
		return groupCard{}, wire.Errorf(wire.ErrBadRequest, "not a group session")
	}
	bot := o.bots.get(ctx, c.Scope, c.Binding, rec.BotUUID)
	return groupCard{Type: "group", ID: rec.TargetID, Name: rec.Name, MemberCount: len(rec.Members), Members: members(rec),
		BotUUID: rec.BotUUID, BotName: bot.name, Adapter: rec.Adapter}, nil
}

// BlobData is a blob as the page endpoint returns it.
type BlobData struct {
	Mime    string `json:"mime"`
	Size    int    `json:"size"`
	DataURL string `json:"data_url,omitempty"`
}

func (o *ops) blob(ctx context.Context, c pageCall, req PageRequest) (BlobData, error) {
	data, mime, err := o.blobBytes(ctx, c, req)
	if err != nil {
		return BlobData{}, err
	}
	if (len(data)+2)/3*4 > o.maxBody-(64<<10) {
		return BlobData{}, wire.Errorf(wire.ErrTooLarge, "the attachment does not fit a page reply")
	}
	return BlobData{Mime: mime, Size: len(data), DataURL: model.DataURL(mime, data)}, nil
}

// blobBytes reads one of the session's blobs and its mime type.
func (o *ops) blobBytes(ctx context.Context, c pageCall, req PageRequest) ([]byte, string, error) {
	if !strings.HasPrefix(req.Name, c.Scope.String()+"."+req.SID+".") {
		return nil, "", wire.Errorf(wire.ErrNotFound, "no such attachment")
	}
	if _, err := o.mustRecord(ctx, c.Scope, req.SID); err != nil {
		return nil, "", err
	}
	data, mime, err := o.st.GetBlob(ctx, c.Scope, req.Name, o.maxBody)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, "", wire.Errorf(wire.ErrNotFound, "no such attachment")
	}
	if errors.Is(err, store.ErrBlobTooLarge) {
		return nil, "", wire.Errorf(wire.ErrTooLarge, "the attachment does not fit a page reply")
	}
	if err != nil {
		return nil, "", err
	}
	if mime == "" {
		mime = model.SniffMime(data)
	}
	return data, mime, nil
}
