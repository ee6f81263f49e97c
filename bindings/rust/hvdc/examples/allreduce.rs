fn main() -> Result<(), hvdc::Error> {
    let hvdc = hvdc::Hvdc::init()?;
    let mut grad = vec![hvdc.rank() as f32 + 1.0; 4];
    hvdc.allreduce_in_place(&mut grad, hvdc::ReduceOp::Sum, &hvdc::Options::new())?;
    println!("rank {} of {}: {:?}", hvdc.rank(), hvdc.size(), grad);
    Ok(())
}
