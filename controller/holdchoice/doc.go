// Package holdchoice is podnet-controller's hold choice for
// --hold-pods=auto (HoldChoice): the Nodes counted through a
// metadata-only informer, and those whose agent reported NRI enforced;
// hold.ChooseAuto's answer written on the ConfigMap the webhook watches.
package holdchoice
