// Loads libhvdc_mpi.so on demand and wraps its table as a Bootstrap.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"

namespace hvdc::bootstrap {

// HVD_ERR_UNSUPPORTED when hvdc was built without MPI or the plugin cannot be loaded.
Status make_mpi_bootstrap(std::unique_ptr<Bootstrap>* out);

}  // namespace hvdc::bootstrap
