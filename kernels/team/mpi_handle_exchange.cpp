#include "kernels/team/mpi_handle_exchange.h"

#include <climits>
#include <string>

namespace arfit::kernels {
namespace {
void check_mpi(int status, const char* call) {
  if (status != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw DeviceError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }
}
}  // namespace

MpiHandleExchange::MpiHandleExchange(MPI_Comm comm) : comm_(comm) {
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

void MpiHandleExchange::all_gather(const void* mine, void* all, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) throw KernelError("MpiHandleExchange: blob too large");
  check_mpi(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, comm_),
            "MPI_Allgather");
}

void MpiHandleExchange::barrier() { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

}  // namespace arfit::kernels
