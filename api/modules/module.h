// What every module gives the process (api/app.cpp holds them in one list): its routes, its
// background work started once the process serves and stopped before it exits, and its
// metrics. A module receives what it needs of the others in its constructor, as references
// to their stores or to interfaces they implement, so app.cpp builds them in dependency
// order and nothing is wired after construction.
#pragma once

#include "api/metrics.h"
#include "api/router.h"

namespace gpurent {

class Module {
 public:
  virtual ~Module() = default;

  virtual void add_routes(http::Router& router) = 0;
  // Threads, listeners and subscriptions' work, after every module is built and the HTTP
  // server is listening. Default: none.
  virtual void start() {}
  // Ends what start() began, waiting for the work in progress; idempotent. The process stops
  // the modules in the reverse of their order in the list.
  virtual void stop() {}
  virtual void add_metrics(http::Metrics& metrics) { (void)metrics; }
};

}  // namespace gpurent
