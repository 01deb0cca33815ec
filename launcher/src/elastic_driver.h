#pragma once
// chorusrun's elastic mode (--min-np, --max-np, --host-discovery-script):
// the workers come and go while the job runs. One loop: it runs the
// discovery script, starts workers on the slots the plan asks for
// (elastic_plan.h) and stops those it no longer does, relays their output,
// notes their ends (a failing host is blacklisted: host_blacklist.h), and
// drives the job's rendezvous (core/src/rendezvous/elastic_rendezvous.h),
// where the workers meet in a new world after every change. docs/elastic.md.

#include "launch_options.h"
#include "tcp_launch_plan.h"

namespace chorus::launcher {

/// Runs the elastic job and returns its exit code: 0 once the workers
/// finished (every one still running when the first ended with 0 ended
/// with 0 too); else the failure, with a line on stderr saying why (fewer
/// than --min-np past --elastic-timeout, --reset-limit passed, discovery
/// failed at the start, a worker failed after another finished).
int run_elastic_job(const LaunchOptions& options, const TcpLaunchContext& context);

}  // namespace chorus::launcher
