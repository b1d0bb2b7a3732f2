package apiclient

import (
	"context"
	"iter"
	"maps"
	"net/http"
	"net/url"
)

// page is a page of any of the API's lists (api.NodeList, api.EventList,
// ...): they share their JSON form.
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// pages iterates over the items of the list at path, with the query
// (filters, page size), fetching its pages as needed. It yields a non-nil
// error at most once, as its last pair.
func pages[T any](ctx context.Context, c *Client, path string, query url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := maps.Clone(query) // each iteration starts at the first page
		if q == nil {
			q = url.Values{}
		}
		for {
			var p page[T]
			if _, err := c.do(ctx, request{method: http.MethodGet, path: path, query: q, out: &p}); err != nil {
				var none T
				yield(none, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			// A server repeating its cursor would make this loop forever.
			if p.NextCursor == "" || p.NextCursor == q.Get("cursor") {
				return
			}
			q.Set("cursor", p.NextCursor)
		}
	}
}

// collect returns every item of seq, or its error.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	all := []T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		all = append(all, v)
	}
	return all, nil
}
