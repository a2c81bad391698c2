# shellcheck shell=bash
# The NRI burst's headline arms (besides the arms without networks they are
# set against: at once, and paced): make bench measures them at N = 30, make test runs them
# at their smallest size on the NRI suites' cluster. Sourced by both.
burstarms=1_network,multus_1_network,1_network_paced,multus_1_network_paced
