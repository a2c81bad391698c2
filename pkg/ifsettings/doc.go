// Package ifsettings is the table of per-interface kernel settings a
// profile may let tenants choose (arp_ignore, rp_filter, addr_gen_mode,
// txqueuelen, ...): where the kernel keeps each, the values it takes, and
// a new link's value. The webhook judges a request against it and the
// agent's dataplane applies from it, so the two read one table; a tenant
// names a setting only by its entry, never by a path.
package ifsettings
