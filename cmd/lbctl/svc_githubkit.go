package main

// githubkitService registers the githubkit service with lbctl. This file belongs to
// the githubkit service; it returns nil until the service exists.
func githubkitService() *devService { return nil }
